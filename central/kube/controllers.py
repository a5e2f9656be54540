"""Thin loops around the pure controllers of central.controllers.

Each loop is level-triggered, like Volcano's and client-go's: reflectors keep the objects
current, every event names the key of the object to reconcile (a pod event names its Job),
a `WorkQueue` hands each key to one worker at a time, and the worker calls the pure function
with what the reflectors hold and applies the decision it returns. Applying is idempotent:
a create that meets 409 AlreadyExists, a delete that meets 404, are done already; a status
write carries the resourceVersion the reflector saw and a 409 just reconciles again. A key
that keeps failing is retried with backoff, and dropped after `MAX_REQUEUE` retries (Volcano's
max-requeue-num); a Job then gets an Event and is terminated, as Volcano's handleJobError does.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from central.controllers.bus import TERMINATE_JOB
from central.controllers.job_policies import OUT_OF_SYNC
from central.controllers.job_volumes import missing_claims
from central.kube.client import (CORE, VOLCANO_BATCH, VOLCANO_BUS, VOLCANO_SCHEDULING, ApiError, KubeClient,
                                 path)
from central.kube.events import EventRecorder
from central.kube.informer import Reflector, object_key
from central.kube.workqueue import WorkQueue
from central.model.jobs import DEFAULT_LIMITS, JobLimits
from central.model.jobs import JOB_NAME as JOB_NAME_LABEL
from central.model.parse import GROUP_NAME

log = logging.getLogger(__name__)

MAX_REQUEUE = 15
WRITTEN_MEMO = 10_000  # objects whose last written content a loop remembers


class ClaimMissing(Exception):
    """A job names a PersistentVolumeClaim that does not exist (yet)."""

# kind -> (API prefix, plural) for the objects the controllers create and delete
URLS = {
    "Pod": (CORE, "pods"), "Service": (CORE, "services"), "ConfigMap": (CORE, "configmaps"),
    "Secret": (CORE, "secrets"), "PersistentVolumeClaim": (CORE, "persistentvolumeclaims"),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies"),
    "PodGroup": (VOLCANO_SCHEDULING, "podgroups"), "Queue": (VOLCANO_SCHEDULING, "queues"),
    "Job": (VOLCANO_BATCH, "jobs"), "Command": (VOLCANO_BUS, "commands"),
}


def _content(obj: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}, sort_keys=True)


def url_for(kind: str, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
    prefix, plural = URLS[kind]
    return path(prefix, plural, namespace, name, sub)


class ControllerLoop:
    """Workers draining a WorkQueue into `sync(key)`; subclasses wire reflectors to keys."""

    name = "controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 3):
        self.client = client
        self.events = events
        self.queue = WorkQueue()
        self.workers = workers
        self.reflectors: list[Reflector] = []
        self.syncs = 0
        self._threads: list[threading.Thread] = []
        self._written: OrderedDict[str, str] = OrderedDict()  # object -> content last written (replace)
        self._written_lock = threading.Lock()

    def watch(self, url: str, to_keys: Callable[[dict[str, Any]], list[str]], **kw: Any) -> Reflector:
        def handler(_: str, obj: dict[str, Any]) -> None:
            for key in to_keys(obj):
                self.queue.add(key)
        reflector = Reflector(self.client, url, handler, **kw)
        self.reflectors.append(reflector)
        return reflector

    def synced(self) -> bool:
        return all(r.synced.is_set() for r in self.reflectors)

    def start_watching(self) -> None:
        for reflector in self.reflectors:
            reflector.start()

    def start_workers(self) -> None:
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking keys and wait for the workers to finish the one each holds (a sync is
        not interrupted mid-write), and for the reflectors to end."""
        self.queue.close()
        for reflector in self.reflectors:
            reflector.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("%s: worker %s still busy %.0f s after stop", self.name, thread.name, timeout)
        for reflector in self.reflectors:
            reflector.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while (key := self.queue.get()) is not None:
            try:
                requeue = self.sync(key)
                self.queue.forget(key)
                if requeue is not None:
                    self.queue.add_after(key, requeue)
            except Exception as err:  # ApiError, network, or a bug: retry with backoff, never die
                if self.queue.failures(key) >= MAX_REQUEUE:  # Volcano: NumRequeues < maxRequeueNum requeues
                    log.error("%s %s: giving up after %d retries: %s", self.name, key, MAX_REQUEUE, err)
                    self.queue.forget(key)
                    self.gave_up(key, err)
                else:
                    delay = self.queue.retry(key)
                    log.warning("%s %s: %s; retrying in %.2fs", self.name, key, err, delay)
            finally:
                self.syncs += 1
                self.queue.done(key)

    def sync(self, key: str) -> float | None:
        """Reconcile one key; return seconds after which to look again, or None."""
        raise NotImplementedError

    def gave_up(self, key: str, err: Exception) -> None:
        pass

    # --- idempotent API verbs ---------------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> bool:
        """True if created, False if it existed already."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        try:
            self.client.create(url_for(obj["kind"], namespace), obj)
            return True
        except ApiError as err:
            if err.code != 409:
                raise
            return False

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        try:
            self.client.delete(url_for(kind, namespace, name))
        except ApiError as err:
            if err.code != 404:
                raise

    def replace(self, obj: dict[str, Any]) -> None:
        """Make the object say what `obj` says (the svc plugin's host lists after a scale), by
        delete and create: the controllers may neither read nor update ConfigMaps (an update
        could claim anyone's object by adding a Job owner; policies.yaml checks the old object
        on delete). Skipped when this process last wrote the same content."""
        meta = obj["metadata"]
        if self._written.get(self._written_key(obj)) == _content(obj):
            return
        self.delete(obj["kind"], meta.get("namespace"), meta["name"])
        self.create(obj)
        self._remember(obj)

    @staticmethod
    def _written_key(obj: dict[str, Any]) -> str:
        return f"{obj['kind']}/{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"

    def _remember(self, obj: dict[str, Any]) -> None:
        with self._written_lock:
            self._written[self._written_key(obj)] = _content(obj)
            self._written.move_to_end(self._written_key(obj))
            while len(self._written) > WRITTEN_MEMO:
                self._written.popitem(last=False)

    def write_status(self, kind: str, obj: dict[str, Any], status: dict[str, Any]) -> None:
        """PUT /status conditional on the resourceVersion we saw; a 409 raises (reconcile again)."""
        meta = obj["metadata"]
        self.client.request("PUT", url_for(kind, meta.get("namespace"), meta["name"], "status"),
                            body=dict(obj, status=status))


class JobController(ControllerLoop):
    """batch.volcano.sh Jobs: pods, PodGroup, plugin objects, status, Commands, TTL."""

    name = "job-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 3,
                 clock: Callable[[], float] = time.time, limits: JobLimits = DEFAULT_LIMITS):
        super().__init__(client, events, workers)
        from central.controllers.jobs import reconcile

        self.reconcile = reconcile
        self.clock = clock
        self.limits = limits  # the webhook's job limits
        self.jobs = self.watch(path(VOLCANO_BATCH, "jobs"), lambda job: [object_key(job)])
        self.podgroups = self.watch(path(VOLCANO_SCHEDULING, "podgroups"), self._podgroup_job)
        self.commands = self.watch(path(VOLCANO_BUS, "commands"), self._command_job)
        self._pods_of: dict[str, set[str]] = {}  # job key -> pod keys
        self._index_lock = threading.Lock()
        self.pods = self.watch(path(CORE, "pods"), self._pod_job, query={"labelSelector": JOB_NAME_LABEL})
        # claims a job names must exist before its pods are made (Volcano's pvcLister)
        self.claims = self.watch(path(CORE, "persistentvolumeclaims"), self._claim_jobs)

    # --- event -> job key ---------------------------------------------------------------------

    def _pod_job(self, pod: dict[str, Any]) -> list[str]:
        meta = pod["metadata"]
        job = f"{meta.get('namespace')}/{(meta.get('labels') or {}).get(JOB_NAME_LABEL)}"
        key = object_key(pod)
        with self._index_lock:
            members = self._pods_of.setdefault(job, set())
            if key in self.pods.objects:
                members.add(key)
            else:  # the reflector already dropped it: a deletion
                members.discard(key)
        return [job]

    def _claim_jobs(self, claim: dict[str, Any]) -> list[str]:
        """The jobs of the claim's namespace that name it (one was waiting for it)."""
        meta = claim["metadata"]
        namespace, name = meta.get("namespace"), meta.get("name")
        return [key for key, job in list(self.jobs.objects.items())
                if job["metadata"].get("namespace") == namespace
                and any(v.get("volumeClaimName") == name for v in (job.get("spec") or {}).get("volumes") or []
                        if isinstance(v, dict))]

    @staticmethod
    def _podgroup_job(podgroup: dict[str, Any]) -> list[str]:
        meta = podgroup["metadata"]
        owners = [o["name"] for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"]
        return [f"{meta.get('namespace')}/{name}" for name in owners]

    @staticmethod
    def _command_job(command: dict[str, Any]) -> list[str]:
        target = command.get("target") or {}
        if target.get("kind") != "Job":
            return []
        return [f"{command['metadata'].get('namespace')}/{target.get('name')}"]

    # --- reconcile ------------------------------------------------------------------------------

    def sync(self, key: str) -> float | None:
        job = self.jobs.objects.get(key)
        if job is None:
            return None  # deleted: its pods and PodGroup go with it (owner references)
        namespace = job["metadata"]["namespace"]
        phase = ((job.get("status") or {}).get("state") or {}).get("phase") or "Pending"
        missing = phase == "Pending" and missing_claims(
            job, {n for k in list(self.claims.objects) for ns, n in [k.split("/", 1)] if ns == namespace})
        if missing:  # as Volcano's initiateJob: retried with backoff, MAX_REQUEUE times, then terminated
            err = ClaimMissing(f"pvc {', '.join(missing)} is not found, the job will be in the Pending state "
                               "until the PVC is created")
            self.events.emit(job, "Warning", "PVCError", f"Failed to create PVC, err: {err}")
            raise err
        decision = self._reconcile(key, job)
        self._apply(job, decision)
        return decision.requeue_after

    def _reconcile(self, key: str, job: dict[str, Any], action: str | None = None) -> Any:
        namespace = job["metadata"]["namespace"]
        with self._index_lock:
            pod_keys = list(self._pods_of.get(key, ()))
        pods = [p for k in pod_keys if (p := self.pods.objects.get(k)) is not None]
        commands = [c for c in list(self.commands.objects.values()) if c["metadata"].get("namespace") == namespace]
        return self.reconcile(job, self.podgroups.objects.get(key), pods, self.clock(), commands, action, self.limits)

    def _apply(self, job: dict[str, Any], d: Any) -> None:
        """Objects first, pods last: a write that fails raises before the pods change, and the
        retry makes the same decision again (a scale's host lists and PodGroup are not lost)."""
        namespace = job["metadata"]["namespace"]
        for reason, message in d.events:
            # abnormal outcomes are Warnings, as `kubectl get events --field-selector type=Warning` expects
            bad = reason == "InvalidJob" or any(f" -> {phase}:" in message for phase in ("Failed", "Aborted"))
            self.events.emit(job, "Warning" if bad else "Normal", reason, message)
        for obj in d.create_objects:
            obj.setdefault("metadata", {}).setdefault("namespace", namespace)
            if self.create(obj):  # a replace right after (the first pods made) need not write it again
                self._remember(obj)
        for obj in d.update_objects:
            obj.setdefault("metadata", {}).setdefault("namespace", namespace)
            self.replace(obj)
        for kind, name in d.delete_objects:
            self.delete(kind, namespace, name)
        if d.delete_podgroup:
            self.delete("PodGroup", namespace, d.delete_podgroup)
        if d.create_podgroup is not None:
            self.create(d.create_podgroup)
        if d.update_podgroup is not None:
            self._resize_podgroup(f"{namespace}/{job['metadata']['name']}", d.update_podgroup)
        for name in d.delete_pods:
            self._delete_own_pod(namespace, name)
        for pod in d.create_pods:
            self.create(pod)
        if d.status_changed:
            self.write_status("Job", job, d.status)
        for name in d.delete_commands:
            self.delete("Command", namespace, name)
        if d.delete_job:
            self.delete("Job", namespace, job["metadata"]["name"])

    def _delete_own_pod(self, namespace: str, name: str) -> None:
        """Mark the pod as deleted by this controller (Volcano's out-of-sync annotation), so the
        deletion is not read back as PodEvicted, then delete it."""
        try:
            self.client.merge_patch(url_for("Pod", namespace, name), {"metadata": {"annotations": {OUT_OF_SYNC: "true"}}})
        except ApiError as err:
            if err.code == 404:
                return
            raise
        self.delete("Pod", namespace, name)

    def _resize_podgroup(self, key: str, fields: dict[str, Any]) -> None:
        """An Update of the PodGroup read (as Volcano's): maps such as minTaskMember are replaced
        whole, and a concurrent write (the scheduler's status) is a 409, reconciled again."""
        podgroup = self.podgroups.objects.get(key)
        if podgroup is None:
            return
        spec = {k: v for k, v in {**(podgroup.get("spec") or {}), **fields}.items() if v is not None}
        meta = podgroup["metadata"]
        self.client.request("PUT", url_for("PodGroup", meta["namespace"], meta["name"]),
                            body=dict(podgroup, spec=spec))

    def gave_up(self, key: str, err: Exception) -> None:
        """As Volcano's handleJobError: an Event, then the job is terminated and its resources released."""
        job = self.jobs.objects.get(key)
        if job is None:
            return
        self.events.emit(job, "Warning", "ExecuteAction",
                         f"Job failed on action SyncJob for retry limit reached ({MAX_REQUEUE} retries): {err}")
        try:
            self._apply(job, self._reconcile(key, job, TERMINATE_JOB))
        except Exception as again:  # the next event on the job tries again
            log.error("%s %s: cannot terminate the job: %s", self.name, key, again)


class QueueController(ControllerLoop):
    """Queues: Open / Closing / Closed from Commands, the cascade to children, PodGroup counts."""

    name = "queue-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1):
        super().__init__(client, events, workers)
        from central.controllers.queues import reconcile_queue

        self.reconcile = reconcile_queue
        self.queues = self.watch(path(VOLCANO_SCHEDULING, "queues"), self._with_children)
        self.podgroups = self.watch(path(VOLCANO_SCHEDULING, "podgroups"),
                                    lambda pg: [(pg.get("spec") or {}).get("queue") or "default"])
        self.commands = self.watch(path(VOLCANO_BUS, "commands"), lambda c: [c["target"]["name"]] if (
            c.get("target") or {}).get("kind") == "Queue" else [])

    def _with_children(self, queue: dict[str, Any]) -> list[str]:
        name = queue["metadata"]["name"]
        children = [n for n, q in list(self.queues.objects.items()) if (q.get("spec") or {}).get("parent") == name]
        return [name, *children]

    def sync(self, key: str) -> float | None:
        queue = self.queues.objects.get(key)
        if queue is None:
            return None
        queues = dict(self.queues.objects)
        commands = list(self.commands.objects.values())
        d = self.reconcile(queue, queues, list(self.podgroups.objects.values()), commands)
        url = url_for("Queue", None, key)
        if d.annotations or d.spec_patch:
            patch: dict[str, Any] = {}
            if d.annotations:
                patch["metadata"] = {"annotations": d.annotations}
            if d.spec_patch:
                patch["spec"] = d.spec_patch
            queue = self.client.merge_patch(url, patch)
        if d.status_changed:
            self.write_status("Queue", queue, d.status)
        for change in d.cascade:
            child = queues.get(change.name)
            if child is None:
                continue
            if change.annotations:
                child = self.client.merge_patch(url_for("Queue", None, change.name),
                                                {"metadata": {"annotations": change.annotations}})
            self.write_status("Queue", child, dict(child.get("status") or {}, state=change.state))
            self.queue.add(change.name)
        for name in d.delete_commands:
            command = next((c for c in commands if c["metadata"]["name"] == name), None)
            if command is not None:
                self.delete("Command", command["metadata"].get("namespace"), name)
        return None


OWNER_URLS = {"ReplicaSet": ("/apis/apps/v1", "replicasets"), "StatefulSet": ("/apis/apps/v1", "statefulsets"),
              "Deployment": ("/apis/apps/v1", "deployments"), "Job": ("/apis/batch/v1", "jobs")}


class PodGroupController(ControllerLoop):
    """A PodGroup for every plain pod of our schedulers (Deployments, StatefulSets, bare pods)."""

    name = "podgroup-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1,
                 scheduler_names: tuple[str, ...] = ("volcano",)):
        super().__init__(client, events, workers)
        from central.controllers.podgroups import podgroup_for_pod

        self.decide = podgroup_for_pod
        self.scheduler_names = scheduler_names
        self.pods = self.watch(path(CORE, "pods"), self._ungrouped)

    def _ungrouped(self, pod: dict[str, Any]) -> list[str]:
        annotations = pod["metadata"].get("annotations") or {}
        if (pod.get("spec") or {}).get("schedulerName") in self.scheduler_names \
                and GROUP_NAME not in annotations and object_key(pod) in self.pods.objects:
            return [object_key(pod)]
        return []

    def sync(self, key: str) -> float | None:
        pod = self.pods.objects.get(key)
        if pod is None:
            return None
        d = self.decide(pod, self._owner(pod), self.scheduler_names)
        if d is None:
            return None
        self.create(d.podgroup)
        namespace, name = key.split("/", 1)
        self.client.merge_patch(path(CORE, "pods", namespace, name), {"metadata": {"annotations": d.pod_annotations}})
        return None

    def _owner(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod's controller (its group-min-member annotation sets the gang size)."""
        ref = next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None or ref.get("kind") not in OWNER_URLS:
            return None
        prefix, plural = OWNER_URLS[ref["kind"]]
        return self.client.get_or_none(path(prefix, plural, pod["metadata"].get("namespace"), ref["name"]))
