"""What the controllers create must be controlled by an owner that exists.

RBAC lets the controllers' token create pods, Services, NetworkPolicies, Secrets, ConfigMaps,
claims and Volcano Jobs in any namespace, and a ValidatingAdmissionPolicy sees one object: it
can require a controller ownerReference of the right kind but not that its owner exists. A
forged reference (a made-up uid, a Job that is gone) would let a stolen token run a pod until
the garbage collector notices. So the webhook, sent only the controllers' creates (its
`matchConditions`), looks the owner up: it must exist in the object's namespace with the
referenced uid, and be of the one kind the controllers create that object for (Volcano Jobs
own the pods and plugin objects; CronJobs and JobFlows own Jobs). A pod must also run as the
ServiceAccount its Job task's template names, so a stolen token cannot start a pod as another
account of the namespace. A lookup that fails denies: fail closed, for the controllers' token only.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from central.model.fields import is_object_name

TASK_SPEC = "volcano.sh/task-spec"  # the task a Job's pod belongs to (central.model.parse)

CONTROLLERS_USER = "system:serviceaccount:caldera-system:caldera-controllers"

# (API group of the created object, its resource) -> the owner kinds allowed, as (group, kind)
JOB = ("batch.volcano.sh", "Job")
OWNER_KINDS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    **{("", resource): (JOB,) for resource in
       ("pods", "services", "secrets", "configmaps", "persistentvolumeclaims")},
    ("networking.k8s.io", "networkpolicies"): (JOB,),
    ("batch.volcano.sh", "jobs"): (("batch.volcano.sh", "CronJob"), ("flow.volcano.sh", "JobFlow")),
}
OWNER_URLS = {JOB: "/apis/batch.volcano.sh/v1alpha1/namespaces/{}/jobs/{}",
              ("batch.volcano.sh", "CronJob"): "/apis/batch.volcano.sh/v1alpha1/namespaces/{}/cronjobs/{}",
              ("flow.volcano.sh", "JobFlow"): "/apis/flow.volcano.sh/v1alpha1/namespaces/{}/jobflows/{}"}


class OwnerUnreadable(Exception):
    """A lookup could not say whether the owner exists (the API server failed): refused."""


# (an owner's url, the uid wanted) -> the object there, or None when there is none; it raises
# OwnerUnreadable when it cannot tell
Lookup = Callable[[str, str], "dict[str, Any] | None"]


def owner_url(namespace: str, ref: dict[str, Any]) -> str | None:
    """The API path of the owner `ref` names, or None for a kind not in OWNER_URLS."""
    group = str(ref.get("apiVersion") or "").split("/")[0]
    where = OWNER_URLS.get((group, str(ref.get("kind") or "")))
    return None if where is None else where.format(namespace, ref.get("name"))


def review_owner(request: dict[str, Any], lookup: Lookup, controllers_user: str = CONTROLLERS_USER) -> dict[str, Any]:
    """The AdmissionReview response for one create request."""
    uid = request.get("uid", "")
    user = (request.get("userInfo") or {}).get("username")
    resource = request.get("resource") or {}
    allowed_kinds = OWNER_KINDS.get((str(resource.get("group") or ""), str(resource.get("resource") or "")))
    if user != controllers_user or request.get("operation") != "CREATE" or request.get("subResource") \
            or allowed_kinds is None:
        return {"uid": uid, "allowed": True}  # not a controllers' create this check is about
    namespace = str(request.get("namespace") or "")
    obj = request.get("object") or {}
    what = f"{resource.get('resource')} {namespace}/{(obj.get('metadata') or {}).get('name') or request.get('name')}"
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    controller = next((r for r in refs if isinstance(r, dict) and r.get("controller") is True), None)
    kinds = " or ".join(f"{kind} ({group})" for group, kind in allowed_kinds)
    if controller is None or (str(controller.get("apiVersion") or "").split("/")[0],
                              controller.get("kind")) not in allowed_kinds:
        return _deny(uid, f"the controllers may create {what} only controlled by a {kinds}")
    name, owner_uid = controller.get("name"), controller.get("uid")
    url = owner_url(namespace, controller)
    if not is_object_name(name) or not owner_uid or url is None:
        return _deny(uid, f"{what}: its controller reference names no valid {kinds}")
    try:
        found = lookup(url, str(owner_uid))
    except OwnerUnreadable as err:  # an owner not confirmed is refused
        return _deny(uid, f"{what}: cannot read its owner {controller.get('kind')} {namespace}/{name}: {err}", 503)
    if found is None:
        return _deny(uid, f"{what}: its owner {controller.get('kind')} {namespace}/{name} does not exist")
    if (found.get("metadata") or {}).get("uid") != owner_uid:
        return _deny(uid, f"{what}: its owner {controller.get('kind')} {namespace}/{name} has another uid "
                          f"than the reference's {owner_uid}")
    if resource.get("resource") == "pods":
        task = str(((obj.get("metadata") or {}).get("annotations") or {}).get(TASK_SPEC) or "")
        wanted = task_accounts(found).get(task)
        account = str((obj.get("spec") or {}).get("serviceAccountName") or "default")
        if wanted != account:
            return _deny(uid, f"{what}: runs as ServiceAccount {account!r}, not its Job task {task!r}'s "
                              f"{wanted!r}" if wanted is not None else f"{what}: its Job has no task {task!r}")
    return {"uid": uid, "allowed": True}


def task_accounts(job: dict[str, Any]) -> dict[str, str]:
    """The ServiceAccount each task of a Volcano Job runs its pods as ("default" when unset)."""
    if "accounts" in job:  # as OwnerCache keeps it
        return dict(job["accounts"])
    out = {}
    for task in (job.get("spec") or {}).get("tasks") or []:
        if isinstance(task, dict):
            spec = ((task.get("template") or {}).get("spec") or {})
            out[str(task.get("name") or "")] = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
    return out


def _deny(uid: str, message: str, code: int = 403) -> dict[str, Any]:
    reason = "Forbidden" if code == 403 else "ServiceUnavailable"
    return {"uid": uid, "allowed": False, "status": {"code": code, "message": message, "reason": reason}}


class OwnerCache:
    """A `Lookup` around a GET (`get(url)`) that remembers a found owner a short while: a Job's
    hundreds of pods cost one read. A hit needs the wanted uid (a uid is never reused, so it is
    that very object; a Job deleted and created again under its name is read afresh). At most
    `size` owners, each for `ttl_s` seconds, so one deleted meanwhile is refused again soon
    (and the garbage collector removes what it owned)."""

    def __init__(self, get: Callable[[str], "dict[str, Any] | None"], ttl_s: float = 30.0, size: int = 4096,
                 clock: Callable[[], float] = time.monotonic):
        self._get, self._ttl_s, self._size, self._clock = get, ttl_s, size, clock
        self._found: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def __call__(self, url: str, uid: str) -> dict[str, Any] | None:
        now = self._clock()
        with self._lock:
            hit = self._found.get(url)
            if hit is not None and now - hit[0] < self._ttl_s and hit[1]["metadata"]["uid"] == uid:
                return hit[1]
        found = self._get(url)
        if found is not None:
            meta = found.get("metadata") or {}
            kept = {"metadata": {"uid": meta.get("uid")}, "accounts": task_accounts(found)}
            with self._lock:
                self._found.pop(url, None)
                if len(self._found) >= self._size:
                    self._found.pop(next(iter(self._found)))  # the oldest
                self._found[url] = (now, kept)
        return found

