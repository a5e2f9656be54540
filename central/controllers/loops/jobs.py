"""The Job controller: pods, PodGroup, plugin objects, status, Commands and TTL of every
batch.volcano.sh Job, by the pure `central.controllers.jobs.reconcile`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from central.controllers.bus import TERMINATE_JOB
from central.controllers.job_podgroup import job_podgroup
from central.controllers.job_policies import OUT_OF_SYNC
from central.controllers.job_volumes import missing_claims
from central.controllers.jobs import event_type
from central.controllers.loops.base import MAX_REQUEUE, ControllerLoop, url_for
from central.kube.client import CORE, VOLCANO_BATCH, VOLCANO_BUS, VOLCANO_SCHEDULING, ApiError, KubeClient, path
from central.kube.events import EventRecorder
from central.kube.informer import object_key
from central.model.jobs import JOB_NAME as JOB_NAME_LABEL
from central.model.jobspec import DEFAULT_LIMITS, JobLimits

if TYPE_CHECKING:
    from central.controllers.jobs import JobDecision

log = logging.getLogger(__name__)

POD_WRITERS = 64  # pod creates and deletes in flight, all jobs together
POD_WRITERS_PER_JOB = 32  # ... and for one job, so one big job leaves room for the others


class ClaimMissing(Exception):
    """A job names a PersistentVolumeClaim that does not exist (yet)."""


class JobController(ControllerLoop):
    """batch.volcano.sh Jobs: pods, PodGroup, plugin objects, status, Commands, TTL."""

    name = "job-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 3,
                 clock: Callable[[], float] = time.time, limits: JobLimits = DEFAULT_LIMITS,
                 pod_writers: int = POD_WRITERS, pod_writers_per_job: int = POD_WRITERS_PER_JOB):
        super().__init__(client, events, workers)
        # A job's pods are created (and deleted) concurrently, as Volcano's controller does:
        # one by one, a 1,000-pod job waited a minute for its pods.
        self._writers = ThreadPoolExecutor(max(1, pod_writers), thread_name_prefix=f"{self.name}-pods")
        self.pod_writers_per_job = max(1, pod_writers_per_job)
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

    def being_deleted(self, key: str) -> bool:
        job = self.jobs.objects.get(key)
        return job is None or bool((job.get("metadata") or {}).get("deletionTimestamp"))

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

    def _reconcile(self, key: str, job: dict[str, Any], action: str | None = None) -> JobDecision:
        namespace = job["metadata"]["namespace"]
        with self._index_lock:
            pod_keys = list(self._pods_of.get(key, ()))
        pods = [p for k in pod_keys if (p := self.pods.objects.get(k)) is not None]
        commands = [c for c in list(self.commands.objects.values()) if c["metadata"].get("namespace") == namespace]
        return self.reconcile(job, job_podgroup(self.podgroups.objects, job), pods, self.clock(), commands, action,
                              self.limits)

    def _apply(self, job: dict[str, Any], d: JobDecision) -> None:
        """Objects first, pods last: a write that fails raises before the pods change, and the
        retry makes the same decision again (a scale's host lists and PodGroup are not lost).
        Events go out once the status is written: a conflicting write is decided again, and
        its Events must not be told twice."""
        namespace = job["metadata"]["namespace"]
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
            self._resize_podgroup(job, d.update_podgroup)
        self._each(lambda name: self._delete_own_pod(namespace, name), d.delete_pods)
        self._each(self.create, d.create_pods)
        if d.status_changed:
            self.write_status("Job", job, d.status)
        for reason, message in d.events:
            self.events.emit(job, event_type(reason, message), reason, message)
        for name in d.delete_commands:
            self.delete("Command", namespace, name)
        if d.delete_job:
            self.delete("Job", namespace, job["metadata"]["name"])

    def _each(self, write: Callable[[Any], Any], items: Sequence[Any]) -> None:
        """`write` every item, at most `pod_writers_per_job` at once on the shared writers. All
        are tried; the first error is raised once they are done (the retry then decides again:
        a create that finds its pod is done, a delete that finds none too)."""
        if len(items) <= 1:
            for item in items:
                write(item)
            return
        window = threading.Semaphore(self.pod_writers_per_job)
        futures: list[Future[Any]] = []
        for item in items:
            window.acquire()
            future = self._writers.submit(write, item)
            future.add_done_callback(lambda _: window.release())
            futures.append(future)
        errors = [err for err in (f.exception() for f in futures) if err is not None]
        if errors:
            raise errors[0]

    def stop(self, timeout: float = 30.0) -> None:
        super().stop(timeout)
        self._writers.shutdown(wait=True)

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

    def _resize_podgroup(self, job: dict[str, Any], fields: dict[str, Any]) -> None:
        """An Update of the PodGroup read (as Volcano's): maps such as minTaskMember are replaced
        whole, and a concurrent write (the scheduler's status) is a 409, reconciled again."""
        podgroup = job_podgroup(self.podgroups.objects, job)
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
