"""The in-memory state of the API stand-in (tests/kube/apiserver.py): objects, the event log,
resourceVersions, selectors, patches and injected faults. No HTTP here.

- a global resourceVersion counter; uid, creationTimestamp, generation; generateName;
  409 AlreadyExists; the namespace defaulted from the URL (400 on a mismatch);
- label selectors (=, ==, !=, exists, !exists) and field selectors (dotted paths, =, !=);
- PUT/PATCH with a resourceVersion precondition (409 Conflict) and the status subresource
  isolated from the main resource (none on PodGroups, as Volcano's CRD: /status is 404);
  merge and json patches; strategic merge patches merge the MERGE_KEYS lists by key, and
  are refused on custom resources (415), as the API server does;
- pods/binding (sets spec.nodeName, 409 if already bound or if the Binding's UID is not the
  pod's) and pods/eviction (deletes at once: no grace period, no PodDisruptionBudget);
- an event log for watches, trimmed at `log_limit`; `compact()` forgets it (410 Gone after);
- faults: `fail(verb, resource, times, code)` refuses the next requests, `fail_after` carries
  them out and then answers an error (a reply lost on the way back).
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any

# resource -> (group/version, kind, namespaced, has status subresource)
RESOURCES: dict[str, tuple[str, str, bool, bool]] = {
    "pods": ("v1", "Pod", True, True),
    "nodes": ("v1", "Node", False, True),
    "namespaces": ("v1", "Namespace", False, True),
    "events": ("v1", "Event", True, False),
    "services": ("v1", "Service", True, True),
    "configmaps": ("v1", "ConfigMap", True, False),
    "secrets": ("v1", "Secret", True, False),
    "persistentvolumeclaims": ("v1", "PersistentVolumeClaim", True, True),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClass", False, False),
    "leases": ("coordination.k8s.io/v1", "Lease", True, False),
    "jobs": ("batch/v1", "Job", True, True),
    "replicasets": ("apps/v1", "ReplicaSet", True, True),
    "statefulsets": ("apps/v1", "StatefulSet", True, True),
    "deployments": ("apps/v1", "Deployment", True, True),
    "networkpolicies": ("networking.k8s.io/v1", "NetworkPolicy", True, False),
    "queues": ("scheduling.volcano.sh/v1beta1", "Queue", False, True),
    "podgroups": ("scheduling.volcano.sh/v1beta1", "PodGroup", True, False),  # Volcano's CRD: no status subresource
    "vcjobs": ("batch.volcano.sh/v1alpha1", "Job", True, True),
    "commands": ("bus.volcano.sh/v1alpha1", "Command", True, False),
    "mutatingwebhookconfigurations": ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", False, False),
    "validatingwebhookconfigurations": ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                                        False, False),
}

# (API group, plural in the URL) -> resource name above; vcjobs and batch/v1 jobs share a plural
ROUTES = {(av.rpartition("/")[0], {"vcjobs": "jobs"}.get(name, name)): name
          for name, (av, _, _, _) in RESOURCES.items()}


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


def get_path(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def matches(obj: dict[str, Any], labels: str | None, fields: str | None) -> bool:
    have = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in (labels or "").split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if have.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if have.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in have:
                return False
        elif term not in have:
            return False
    for term in filter(None, (t.strip() for t in (fields or "").split(","))):
        negate = "!=" in term
        key, value = term.split("!=" if negate else "=", 1)
        key = key.rstrip("=")
        actual = get_path(obj, key)
        actual = "" if actual is None else str(actual)
        if (actual == value) == negate:
            return False
    return True


# Lists a strategic merge patch merges by key instead of replacing (the built-in types' patchMergeKey);
# only those Caldera's code or tests touch. Custom resources have none: the API answers 415.
MERGE_KEYS = {"conditions": "type", "containers": "name", "initContainers": "name", "volumes": "name", "env": "name"}
CUSTOM = frozenset({"queues", "podgroups", "vcjobs", "commands"})


def merge_patch(target: Any, patch: Any, strategic: bool = False) -> Any:
    """JSON merge patch (RFC 7386), or with `strategic` the lists of MERGE_KEYS merged item by
    item on their key, as the API server does for the built-in types."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif strategic and key in MERGE_KEYS and isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, MERGE_KEYS[key])
        else:
            result[key] = merge_patch(result.get(key), value, strategic)
    return result


def _merge_list(items: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    merged = [copy.deepcopy(item) for item in items]
    for change in patch:
        at = next((i for i, item in enumerate(merged) if item.get(merge_key) == change.get(merge_key)), None)
        if at is None:
            merged.append(copy.deepcopy(change))
        else:
            merged[at] = merge_patch(merged[at], change, strategic=True)
    return merged


def json_patch(target: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1] if parts else None
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif op["op"] == "test" and (parent.get(last) if isinstance(parent, dict) else None) != op["value"]:
            raise ApiError(422, "Invalid", f"test operation failed at {op['path']}")
    return doc


class Store:
    """Objects by resource, the event log and the fault table. One lock guards everything."""

    def __init__(self, log_limit: int = 200_000):
        self.lock = threading.Condition()
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
        self.log: list[tuple[int, str, str, dict | None, dict | None]] = []  # rv, resource, type, old, new
        self.log_floor = 0  # watches from below this version get 410 Gone
        self.log_limit = log_limit
        self.rv = 0
        self.faults: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.late_faults: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.requests: list[tuple[str, str, str]] = []  # verb, resource, key: what the server saw
        self.access: set[tuple[str, str, str]] = set()  # (API group, resource[/sub], RBAC verb)
        self.watch_generation = 0
        self.stopping = False

    # --- test hooks -------------------------------------------------------------------------

    def fail(self, verb: str, resource: str, times: int = 1, code: int = 500) -> None:
        """Answer the next `times` requests of `verb` on `resource` with HTTP `code`."""
        with self.lock:
            self.faults[(verb, resource)].extend([code] * times)

    def fail_after(self, verb: str, resource: str, times: int = 1, code: int = 504) -> None:
        """Carry out the next `times` such requests but answer `code`: a reply lost on the way."""
        with self.lock:
            self.late_faults[(verb, resource)].extend([code] * times)

    def compact(self) -> None:
        """Forget the event log, as etcd compaction does: older watches get 410 Gone."""
        with self.lock:
            self.log.clear()
            self.log_floor = self.rv

    def close_watches(self) -> None:
        with self.lock:
            self.watch_generation += 1
            self.lock.notify_all()

    def count(self, verb: str, resource: str) -> int:
        with self.lock:
            return sum(1 for v, r, _ in self.requests if (v, r) == (verb, resource))

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self.objects[resource].get((namespace, name))
            return copy.deepcopy(obj)

    # --- operations ---------------------------------------------------------------------------

    def check_fault(self, verb: str, resource: str, key: str) -> None:
        self.requests.append((verb, resource, key))
        codes = self.faults.get((verb, resource))
        if codes:
            code = codes.pop(0)
            raise ApiError(code, "InternalError" if code >= 500 else "Injected",
                           f"injected {code} on {verb} {resource}")

    def check_late_fault(self, verb: str, resource: str) -> None:
        codes = self.late_faults.get((verb, resource))
        if codes:
            code = codes.pop(0)
            raise ApiError(code, "Timeout", f"injected {code} after {verb} {resource}")

    def _record(self, resource: str, kind: str, old: dict | None, new: dict | None) -> None:
        self.log.append((self.rv, resource, kind, old, new))
        if len(self.log) > self.log_limit:
            drop = len(self.log) // 2
            self.log_floor = self.log[drop - 1][0]
            del self.log[:drop]
        self.lock.notify_all()

    def _stamp(self, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def create(self, resource: str, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        api_version, kind, namespaced, _ = RESOURCES[resource]
        meta = obj.setdefault("metadata", {})
        if namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise ApiError(400, "BadRequest",
                               "the namespace of the object does not match the namespace on the request")
            meta["namespace"] = namespace
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, "Invalid", "metadata.name: Required value")
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        key = (namespace if namespaced else "", meta["name"])
        if key in self.objects[resource]:
            raise ApiError(409, "AlreadyExists", f'{resource} "{meta["name"]}" already exists')
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        meta.update(uid=str(uuid.uuid4()), generation=1,
                    creationTimestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if resource == "pods":
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        self._stamp(obj)
        self.objects[resource][key] = obj
        self._record(resource, "ADDED", None, obj)
        return obj

    def replace(self, resource: str, key: tuple[str, str], new: dict[str, Any],
                status_only: bool | None) -> dict[str, Any]:
        """Store `new` over the object at `key`. `status_only` True/False isolates the status
        subresource (only status / everything but status changes); None replaces it all."""
        old = self.objects[resource].get(key)
        if old is None:
            raise ApiError(404, "NotFound", f'{resource} "{key[1]}" not found')
        wanted = (new.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource} "{key[1]}": the object '
                           "has been modified; please apply your changes to the latest version and try again")
        if status_only is True:
            merged = dict(copy.deepcopy(old), status=new.get("status", {}))
        else:
            merged = copy.deepcopy(new)
            merged["metadata"] = dict(new.get("metadata") or {}, **{k: old["metadata"][k] for k in (
                "uid", "creationTimestamp", "namespace", "name") if k in old["metadata"]})
            merged.setdefault("apiVersion", old["apiVersion"])
            merged.setdefault("kind", old["kind"])
            if status_only is False and "status" in old:
                merged["status"] = copy.deepcopy(old["status"])
            if merged.get("spec") != old.get("spec"):
                merged["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        self._stamp(merged)
        self.objects[resource][key] = merged
        self._record(resource, "MODIFIED", old, merged)
        return merged

    def delete(self, resource: str, key: tuple[str, str]) -> dict[str, Any]:
        old = self.objects[resource].pop(key, None)
        if old is None:
            raise ApiError(404, "NotFound", f'{resource} "{key[1]}" not found')
        gone = copy.deepcopy(old)
        self._stamp(gone)
        self._record(resource, "DELETED", old, gone)
        return gone

    def bind(self, key: tuple[str, str], body: dict[str, Any]) -> dict[str, Any]:
        pod = self.objects["pods"].get(key)
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{key[1]}" not found')
        node = (body.get("target") or {}).get("name")
        if not node:
            raise ApiError(422, "Invalid", "target.name: Required value")
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"].get("uid"):  # the real apiserver's UID precondition
            raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, "
                           f"UID in object meta: {pod['metadata'].get('uid')}")
        if pod.get("spec", {}).get("nodeName"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{key[1]}": '
                           f'pod {key[1]} is already assigned to node "{pod["spec"]["nodeName"]}"')
        bound = copy.deepcopy(pod)
        bound["spec"]["nodeName"] = node
        bound["status"].setdefault("conditions", []).append({"type": "PodScheduled", "status": "True"})
        del bound["metadata"]["resourceVersion"]
        self.replace("pods", key, bound, None)
        return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
