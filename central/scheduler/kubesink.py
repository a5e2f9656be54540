"""`KubeSink`: a scheduling cycle's decisions turned into API calls.

- **bind**: the cycle already charged the node in the cache (the pod is Binding there until
  the watch shows it bound); a worker pool (bounded concurrency, the client's QPS limiter)
  posts `pods/binding`. On failure the pod is read back from the API and reported to
  `bind_failed` as it is (the scheduler hands it to the cache, releasing the node); a later
  cycle retries it. The pod gets a PodScheduled=False/SchedulerError condition
  and a FailedScheduling Event saying why. The API server is the fence against a double bind: a
  second Binding for a bound pod gets 409, and the read-back then shows the pod bound. The
  Binding carries the UID of the pod decided on (as Volcano's), so a pod deleted and created
  again under the same name meanwhile is refused too (409), not bound unseen.
- **annotate** (GPU index, cpuset, ...) is written onto the pod by the bind worker just before
  its Binding, as Volcano's PreBind does; a failed write fails the bind.
- **reserve_device_claims** (kube-scheduler's DynamicResources PreBind, `claimwriter.py`): the
  bind worker allocates and reserves the pod's ResourceClaims before the Binding, and takes
  them back when the pod does not bind.
- **bind_claims** (kube-scheduler's VolumeBinding PreBind), also by the bind worker before the
  Binding: a volume chosen for a claim gets its `spec.claimRef` (and
  `pv.kubernetes.io/bound-by-controller`), a merge patch carrying the resourceVersion the
  decision saw, so a volume another claim took meanwhile refuses it (409); a claim to be
  provisioned gets `volume.kubernetes.io/selected-node`. The pod is bound once its claims
  are Bound (the PV controller completes a claimRef within moments; `claim_timeout` at most)
  or being provisioned (the annotation is written). A failed write or a claim not bound in
  time fails the bind, and the pod is retried like any failed bind.
- **evict**: the Eviction API (policy/v1), so PodDisruptionBudgets are honoured and the API
  server sets the DisruptionTarget condition and deletes with the pod's own grace period; a
  429 (a budget refuses) means "not now", counted apart from failures.
- **remove_queue_gate**: handed to `central.scheduler.gateremoval`'s workers, off the cycle.
- **nominate** and **publish_node_resources** are merge patches on pods/status
  (`nominatedNodeName`) and nodes/status (extended resources such as kubernetes.io/batch-cpu).
- **status**: PodGroup and Queue statuses are collected during the cycle and handed at
  session close (`flush()`, which does not wait) to their own lane of writer threads, so a
  bind never queues behind a status write and a slow status write never holds up the next
  cycle. Per object only the newest status is written: one handed over again before its
  write starts is written once, one handed over while being written is written again after.
  A PodGroup's is a PUT on the PodGroup itself carrying the resourceVersion the reflector
  last saw (Volcano's PodGroup CRD has no status subresource, and Volcano's scheduler updates
  the whole object); a 409 re-reads the object and tries again. Cycles come faster than the
  watch shows a write, so a PodGroup written again starts from the object its last write
  returned while the watch still shows a version its writes replaced. A PodGroup status is compared
  as Volcano's Go types compare it and written without empty fields (`central.model.pgstatus`),
  so an operator that writes the object back through the Go client never looks like a change.
  Of a Queue's status the scheduler writes `allocated` (and whatever else the cycle reports but
  the state and PodGroup counts, which are the Queue controller's) as a merge patch of those
  fields alone: one writer per field, so neither writer conflicts with the other or writes back
  its stale values. Unchanged statuses are not written, and fields the cycle does not report
  are kept. A PodGroup status that changes only a condition's message (a gang's pod counts
  while its pods are made) is written at most once per `condition_interval`, the newest then
  (`central.scheduler.statushold`). A PodGroup the cycle could not place gets a Warning
  Unschedulable Event each cycle (`podgroup_events`), which the recorder's correlator counts
  and rate-limits.
- **native PodGroups** (Kubernetes' gang API, `central.model.nativegang`): a PodGroup the
  cycle reports that only the native API holds gets kube-scheduler's
  `PodGroupInitiallyScheduled` condition instead, as a strategic merge patch of
  `podgroups/status` (conditions merge by type), only when it changes; its Events go to the
  native object.
- **queue annotations** (usage a plugin keeps across restarts) go through the status lane
  too, as a merge patch of `metadata.annotations` on the Queue; each plugin limits how often
  it hands them over, and the sink skips values the Queue already carries.
- **patch types**: a merge patch where the body holds only maps and scalars (annotations,
  nominatedNodeName, node resources: both kinds mean the same there), a strategic merge patch
  where a list must merge item by item (a pod's conditions, by type; a merge patch would
  replace the list). Custom resources accept no strategic merge (415): merge patch or PUT.
- **pending**: each pending pod's reason becomes its `PodScheduled=False, Unschedulable`
  condition (what autoscalers read), written through the status lane when it changes, with a
  FailedScheduling Event (what users look for in `kubectl describe pod`). A bind records a
  Normal Scheduled Event.
- **faults**: an object whose data the cycle could not use (a malformed annotation on a
  PodGroup, Pod or Node) gets a Warning Event saying which field and why: one Event per fault
  per object.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime, timezone
from typing import Any

from central.framework.faults import EVENT_REASON, Fault
from central.kube.client import CORE, SCHEDULING_BETA, VOLCANO_SCHEDULING, ApiError, KubeClient, path
from central.kube.events import EventRecorder
from central.kube.workqueue import WorkQueue
from central.model.dra import DeviceClaimWrite
from central.model.nativegang import initially_scheduled
from central.model.objects import QUEUE_CONTROLLER_FIELDS
from central.model.pgstatus import as_written, semantic
from central.model.volumes import BOUND_BY_CONTROLLER, SELECTED_NODE, ClaimBinding
from central.scheduler.claimwriter import ClaimWriter, Reserved
from central.scheduler.gateremoval import DEFAULT_WORKERS as DEFAULT_GATE_WORKERS
from central.scheduler.gateremoval import GateRemover
from central.scheduler.podscheduled import PodScheduledMarks
from central.scheduler.statushold import StatusHold, message_blind, never_urgent

log = logging.getLogger(__name__)

CONFLICT_RETRIES = 3
QUEUE_STATUS_INTERVAL = 1.0  # seconds, the default period: what Volcano's queue status writes come at
BIND_WORKERS = 64  # binds wait on the API server, not the CPU: a cycle's binds go out together
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"

NATIVE_PODGROUP = "NativePodGroup"  # the objects' kind for Kubernetes' own PodGroups (scheduling.k8s.io)

# Told of each failed bind: the pod's key, the pod as the API has it now (None: gone) and how
# many seconds to hold it back before a cycle may place it again.
BindFailed = Callable[[str, dict[str, Any] | None, float], None]


class KubeSink:
    def __init__(self, client: KubeClient, bind_failed: BindFailed, objects: dict[str, dict[str, dict[str, Any]]],
                 events: EventRecorder, bind_workers: int = BIND_WORKERS, bind_backoff: tuple[float, float] = (1.0, 10.0),
                 status_workers: int = 4, condition_interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, claim_timeout: float = 60.0,
                 gate_workers: int = DEFAULT_GATE_WORKERS):
        self.client = client
        self.bind_failed = bind_failed
        self.objects = objects  # kind -> the reflector's latest objects by key
        self.events = events
        self.pool = ThreadPoolExecutor(bind_workers, thread_name_prefix="bind")
        self.statuses = LatestWriter(self._write_status, status_workers, "status")
        self.gates = GateRemover(client, gate_workers)
        self._inflight: set[Future[None]] = set()
        self._lock = threading.Lock()
        self._podgroups: dict[str, dict[str, Any]] = {}
        # PodGroup key -> (the resourceVersions its status PUTs replaced, the object the last one
        # returned): while the reflector still shows one of those, the next write starts from the
        # returned object, not a stale copy that would be refused (409) and read back
        self._own_writes: dict[str, tuple[frozenset[str], dict[str, Any]]] = {}
        self._queues: dict[str, dict[str, Any]] = {}  # queue -> its status this cycle
        self.queue_hold = StatusHold(QUEUE_STATUS_INTERVAL, never_urgent)
        self._queue_annotations: dict[str, dict[str, str]] = {}
        self._annotations: dict[str, dict[str, str]] = {}
        self._claims: dict[str, tuple[ClaimBinding, ...]] = {}
        self._device_claims: dict[str, tuple[DeviceClaimWrite, ...]] = {}
        self.claim_writer = ClaimWriter(client)
        self.claim_timeout = claim_timeout
        self.bind_backoff = bind_backoff
        self._bind_failures: dict[str, int] = {}  # pod key -> consecutive failed binds
        self.marks = PodScheduledMarks(condition_interval)
        self.podgroup_hold = StatusHold(condition_interval, message_blind)
        self.clock = clock
        self.counts = {"bind": 0, "bind_failed": 0, "evict": 0, "evict_refused": 0, "evict_failed": 0, "status": 0,
                       "conflict": 0, "condition": 0, "queue_annotations": 0}

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    # --- ClusterSink ----------------------------------------------------------------------------

    def annotate(self, pod_key: str, annotations: dict[str, str]) -> None:
        self._annotations[pod_key] = dict(annotations)  # written by the bind worker, before the Binding

    def bind_claims(self, pod_key: str, bindings: tuple[ClaimBinding, ...]) -> None:
        self._claims[pod_key] = bindings  # written by the bind worker, before the Binding

    def reserve_device_claims(self, pod_key: str, writes: tuple[DeviceClaimWrite, ...]) -> None:
        self._device_claims[pod_key] = writes  # written by the bind worker, before the Binding

    def bind(self, pod_key: str, node: str) -> None:
        # the UID the decision was made for: a pod deleted and recreated under the same name
        # meanwhile is refused by the API server (409) instead of bound unseen (as Volcano)
        uid = ((self.objects.get("Pod", {}).get(pod_key) or {}).get("metadata") or {}).get("uid")
        self._submit(self._bind, pod_key, node, self._annotations.pop(pod_key, None), uid, self._claims.pop(pod_key, ()),
                     self._device_claims.pop(pod_key, ()))

    def remove_queue_gate(self, pod_key: str) -> None:
        self.gates.enqueue(pod_key)

    def nominate(self, pod_key: str, node: str) -> None:
        namespace, name = pod_key.split("/", 1)
        self._submit(self._patch, path(CORE, "pods", namespace, name, "status"),
                     {"status": {"nominatedNodeName": node}})

    def publish_node_resources(self, node: str, resources: dict[str, str]) -> None:
        self._submit(self._patch, path(CORE, "nodes", None, node, "status"),
                     {"status": {"capacity": resources, "allocatable": resources}})

    def evict(self, pod_key: str, reason: str) -> None:
        self._submit(self._evict, pod_key, reason)

    def update_podgroup_status(self, podgroup_key: str, status: dict[str, Any]) -> None:
        self._podgroups[podgroup_key] = status

    def update_queue_status(self, queue_name: str, status: dict[str, Any]) -> None:
        # the Queue controller owns the state and the PodGroup counts; two writers of one field
        # would fight every cycle (Volcano #3597), so the scheduler writes the rest (allocated)
        self._queues[queue_name] = {k: v for k, v in status.items() if k not in QUEUE_CONTROLLER_FIELDS}

    def annotate_queue(self, queue_name: str, annotations: dict[str, str]) -> None:
        self._queue_annotations.setdefault(queue_name, {}).update(annotations)

    def pending(self, reasons: dict[str, str]) -> None:
        """Why-pending reasons of this cycle become the pods' PodScheduled=False condition
        (`central.scheduler.podscheduled`) and, where it changes, a FailedScheduling Event, as
        Volcano's taskUnschedulable does. The condition goes through the status lane."""
        pods = self.objects.get("Pod", {})
        now = self.clock()
        for pod_key, message in reasons.items():
            pod = pods.get(pod_key)
            if pod is None:
                continue
            condition = self.marks.due(pod_key, pod, message, now)
            if condition is not None:
                self.events.emit(pod, "Warning", "FailedScheduling", message)
                self.statuses.put(("PodScheduled", pod_key), condition)
        self.marks.keep_only(reasons)

    def podgroup_events(self, unschedulable: dict[str, str]) -> None:
        """A Warning Unschedulable Event on every PodGroup this cycle could not place, each
        cycle, as Volcano's RecordJobStatusEvent: the recorder's correlator counts repeats and
        limits the writes (client-go's spam filter)."""
        for key, message in unschedulable.items():
            podgroup = self._podgroup(key)
            if podgroup is not None:
                self.events.emit(podgroup, "Warning", "Unschedulable", message)

    def plugin_events(self, events: list[tuple[str, str, str, str]]) -> None:
        """Events plugins told on PodGroups (a reservation made or released)."""
        for key, kind, reason, message in events:
            podgroup = self._podgroup(key)
            if podgroup is not None:
                self.events.emit(podgroup, kind, reason, message)

    def _podgroup(self, key: str) -> dict[str, Any] | None:
        """The PodGroup of this key: Volcano's, else a native one (Volcano's takes precedence)."""
        return self.objects.get("PodGroup", {}).get(key) or self.objects.get(NATIVE_PODGROUP, {}).get(key)

    def faults(self, faults: list[Fault]) -> None:
        """This cycle's faults become Warning Events on the objects concerned."""
        for fault in faults:
            obj = self.objects.get(fault.kind, {}).get(fault.key)
            if obj is not None:
                self.events.emit(obj, "Warning", EVENT_REASON, fault.reason)

    # --- session close ------------------------------------------------------------------------

    def flush(self, held: bool = False) -> None:
        """Hand the statuses collected this cycle to the status lane; returns at once. A
        queue's status goes at most once per `QUEUE_STATUS_INTERVAL` (cycles that new pods
        bring forward would write it each time), a PodGroup's that changes only a condition's
        message once per `condition_interval` (`central.scheduler.statushold`); one held back
        goes at a later flush, the newest then, or with `held`, now."""
        podgroups, self._podgroups = self._podgroups, {}
        now = self.clock()
        for key, status in self.podgroup_hold.due(podgroups, now, everything=held):
            self.statuses.put(("PodGroup", key), status)
        queues, self._queues = self._queues, {}
        for name, status in self.queue_hold.due(queues, now, everything=held):
            self.statuses.put(("Queue", name), status)
        annotations, self._queue_annotations = self._queue_annotations, {}
        for name, marks in annotations.items():
            self.statuses.put(("QueueAnnotations", name), marks)
        shown = self.objects.get("PodGroup", {})
        for key, (replaced, _) in list(self._own_writes.items()):  # the watch has shown them, or they are gone
            current = shown.get(key)
            if current is None or _version(current) not in replaced:
                self._own_writes.pop(key, None)

    def drain(self, timeout: float | None = None) -> None:
        """Wait for in-flight binds, evictions and status writes (graceful shutdown, tests)."""
        with self._lock:
            pending = set(self._inflight)
        wait(pending, timeout)
        self.statuses.wait_idle(timeout)

    def close(self) -> None:
        self.flush(held=True)
        self.drain(30.0)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.statuses.close()
        self.gates.close()

    # --- workers ------------------------------------------------------------------------------

    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        future = self.pool.submit(fn, *args)
        with self._lock:
            self._inflight.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._inflight.discard(future)

    def _patch(self, url: str, body: dict[str, Any], content_type: str = MERGE) -> None:
        try:
            self.client.request("PATCH", url, body=body, content_type=content_type)
        except ApiError as err:
            log.warning("patch %s failed: %s", url, err)

    def _bind(self, pod_key: str, node: str, annotations: dict[str, str] | None, uid: str | None = None,
              claims: tuple[ClaimBinding, ...] = (), device_claims: tuple[DeviceClaimWrite, ...] = ()) -> None:
        namespace, name = pod_key.split("/", 1)
        meta = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
        reserved: list[Reserved] = []
        try:
            if claims:
                self._bind_claims(claims)
            if device_claims:  # kube-scheduler's DynamicResources PreBind; released below if the bind fails
                if not uid:
                    raise ApiError(409, "Conflict", f"pod {pod_key} has no uid to reserve its resource claims for")
                reserved = self.claim_writer.reserve(name, uid, device_claims)
            if annotations:  # Volcano's PreBind: what the plugins chose, on the pod before it runs
                patch: dict[str, Any] = {"metadata": {"annotations": annotations}}
                if uid:  # metadata.uid is immutable: the API server refuses this patch on a recreated pod
                    patch["metadata"]["uid"] = uid
                self.client.merge_patch(path(CORE, "pods", namespace, name), patch)
            self.client.create(path(CORE, "pods", namespace, name, "binding"), {
                "apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
            self._count("bind")
            with self._lock:
                self._bind_failures.pop(pod_key, None)
            pod = self.objects.get("Pod", {}).get(pod_key)
            if pod is not None:  # as Volcano's binder and kube-scheduler record it
                self.events.emit(pod, "Normal", "Scheduled", f"Successfully assigned {pod_key} to {node}")
        except ApiError as err:
            self._count("bind_failed")
            with self._lock:
                failures = self._bind_failures[pod_key] = self._bind_failures.get(pod_key, 0) + 1
            log.warning("bind %s to %s failed (%d in a row): %s", pod_key, node, failures, err)
            current = self._read_back(pod_key)
            if reserved and uid and not (current or {}).get("spec", {}).get("nodeName"):
                self.claim_writer.release(uid, reserved)  # written, but the pod did not bind: take them back
            first, most = self.bind_backoff
            self.bind_failed(pod_key, current, min(first * 2 ** (failures - 1), most))
            if current is not None and not current.get("spec", {}).get("nodeName"):
                message = f"Binding rejected: {err.message or err}"
                self.events.emit(current, "Warning", "FailedScheduling", message)
                # as Volcano does (Volcano #3547): the pod says why; a strategic merge keeps its other conditions
                self._patch(path(CORE, "pods", namespace, name, "status"), {"status": {"conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": message}]}},
                    STRATEGIC)

    def _bind_claims(self, claims: tuple[ClaimBinding, ...]) -> None:
        """Write what the cycle chose for the pod's claims, then wait until each claim given a
        volume is Bound to it (the PV controller completes the binding). ApiError on failure."""
        volumes, pvcs = self.objects.get("PersistentVolume", {}), self.objects.get("PersistentVolumeClaim", {})
        for b in claims:
            namespace, name = b.claim.split("/", 1)
            claim = pvcs.get(b.claim) or {}
            if not b.volume:
                if (claim.get("metadata", {}).get("annotations") or {}).get(SELECTED_NODE) != b.node:
                    self.client.merge_patch(path(CORE, "persistentvolumeclaims", namespace, name),
                                            {"metadata": {"annotations": {SELECTED_NODE: b.node}}})
                continue
            volume = volumes.get(b.volume) or {}
            ref = (volume.get("spec") or {}).get("claimRef") or {}
            if (ref.get("namespace"), ref.get("name")) == (namespace, name):
                continue  # pre-bound to it, or another pod of this claim wrote it
            meta = claim.get("metadata") or {}
            self.client.merge_patch(path(CORE, "persistentvolumes", None, b.volume), {
                "metadata": {"resourceVersion": (volume.get("metadata") or {}).get("resourceVersion"),
                             "annotations": {BOUND_BY_CONTROLLER: "yes"}},
                "spec": {"claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": namespace,
                                      "name": name, "uid": meta.get("uid"),
                                      "resourceVersion": meta.get("resourceVersion")}}})
        deadline = time.monotonic() + self.claim_timeout
        for b in claims:
            while b.volume:
                claim = pvcs.get(b.claim) or {}
                if (claim.get("status") or {}).get("phase") == "Bound" and claim["spec"].get("volumeName") == b.volume:
                    break
                if time.monotonic() > deadline:
                    raise ApiError(504, "Timeout", f"claim {b.claim} not bound to volume {b.volume} "
                                                   f"within {self.claim_timeout:.0f}s")
                time.sleep(0.1)

    def _write_condition(self, pod_key: str, condition: dict[str, Any]) -> None:
        """A strategic merge patch: the PodScheduled condition replaced by type, the others kept."""
        namespace, name = pod_key.split("/", 1)
        try:
            self.client.request("PATCH", path(CORE, "pods", namespace, name, "status"),
                                body={"status": {"conditions": [condition]}}, content_type=STRATEGIC)
            self._count("condition")
        except ApiError as err:
            if err.code != 404:
                log.warning("PodScheduled condition of %s not written: %s", pod_key, err)

    def _read_back(self, pod_key: str) -> dict[str, Any] | None:
        """The pod as the API has it now; the reflector's copy if the API cannot say."""
        namespace, name = pod_key.split("/", 1)
        try:
            return self.client.get_or_none(path(CORE, "pods", namespace, name))
        except ApiError as err:
            log.warning("cannot read %s back (%s); using the last watched copy", pod_key, err)
            return self.objects.get("Pod", {}).get(pod_key)

    def _evict(self, pod_key: str, reason: str) -> None:
        namespace, name = pod_key.split("/", 1)
        pod = self.objects.get("Pod", {}).get(pod_key)
        try:
            self.client.create(path(CORE, "pods", namespace, name, "eviction"), {
                "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}})
            self._count("evict")
            if pod is not None:  # a Warning, as Volcano's evictor records it
                self.events.emit(pod, "Warning", "Evict", f"Pod is evicted, because of {reason}")
        except ApiError as err:
            if err.code == 404:
                return
            if err.code == 429:  # a PodDisruptionBudget says not now: the next cycle decides again
                self._count("evict_refused")
                log.info("eviction of %s (%s) refused for now: %s", pod_key, reason, err.message or err)
                return
            self._count("evict_failed")
            log.warning("evicting %s (%s) failed: %s", pod_key, reason, err)

    def _write_status(self, which: tuple[str, str], status: dict[str, Any]) -> None:
        kind, key = which
        if kind == "PodScheduled":
            self._write_condition(key, status)
            return
        if kind == "QueueAnnotations":
            current = ((self.objects.get("Queue", {}).get(key) or {}).get("metadata") or {}).get("annotations") or {}
            if any(current.get(k) != v for k, v in status.items()):
                try:
                    self.client.merge_patch(path(VOLCANO_SCHEDULING, "queues", None, key),
                                            {"metadata": {"annotations": status}})
                    self._count("queue_annotations")
                except ApiError as err:
                    if err.code != 404:
                        log.warning("annotations of Queue %s not written: %s", key, err)
            return
        if kind == "Queue":  # its fields alone, unconditionally: the Queue controller writes the others
            current = (self.objects.get(kind, {}).get(key) or {}).get("status") or {}
            if any(current.get(k) != v for k, v in status.items()):
                try:
                    self.client.request("PATCH", path(VOLCANO_SCHEDULING, "queues", None, key, "status"),
                                        body={"status": status}, content_type=MERGE)
                    self._count("status")
                except ApiError as err:
                    log.warning("status of Queue %s not written: %s", key, err)
            return
        namespace, name = key.split("/", 1) if "/" in key else (None, key)
        if kind == "PodGroup" and key not in self.objects.get("PodGroup", {}) and key in self.objects.get(NATIVE_PODGROUP, {}):
            self._write_native_status(namespace, name, status)
            return
        resource = "podgroups" if kind == "PodGroup" else "queues"
        # Volcano's PodGroup CRD has no status subresource: its status is written with the object
        url = path(VOLCANO_SCHEDULING, resource, namespace, name, None if kind == "PodGroup" else "status")
        current = self.objects.get(kind, {}).get(key)
        own = self._own_writes.get(key)
        if own is not None and current is not None and _version(current) in own[0]:
            current = own[1]  # the watch has not shown the last write yet
        try:
            for attempt in range(CONFLICT_RETRIES):
                if current is None:
                    current = self.client.get_or_none(path(VOLCANO_SCHEDULING, resource, namespace, name))
                    if current is None:
                        return  # deleted meanwhile
                # keep the fields the scheduler does not own (a Queue's state is the controller's)
                desired = {**(current.get("status") or {}), **status}
                if kind == "PodGroup":  # as the Go types see it: no rewrite over an omitempty writer's copy
                    desired = as_written(desired)
                    unchanged = semantic(current.get("status")) == semantic(desired)
                else:
                    unchanged = current.get("status") == desired
                if not unchanged:
                    try:
                        written = self.client.request("PUT", url, body=dict(current, status=desired))
                        self._count("status")
                        if kind == "PodGroup" and written:
                            replaced = own[0] if own is not None else frozenset()
                            self._own_writes[key] = (replaced | {_version(current)}, written)
                    except ApiError as err:
                        self._own_writes.pop(key, None)
                        if err.code != 409 or attempt == CONFLICT_RETRIES - 1:
                            raise
                        self._count("conflict")
                        current = None
                        continue
                break
        except ApiError as err:
            log.warning("status of %s %s not written: %s", kind, key, err)

    def _write_native_status(self, namespace: str | None, name: str, status: dict[str, Any]) -> None:
        native = self.objects.get(NATIVE_PODGROUP, {}).get(f"{namespace}/{name}")
        condition = None if native is None else initially_scheduled(status, native, _rfc3339_now())
        if condition is None:
            return
        try:
            self.client.request("PATCH", path(SCHEDULING_BETA, "podgroups", namespace, name, "status"),
                                body={"status": {"conditions": [condition]}}, content_type=STRATEGIC)
            self._count("status")
        except ApiError as err:
            if err.code != 404:
                log.warning("status of PodGroup %s/%s (%s) not written: %s", namespace, name, SCHEDULING_BETA, err)


def _rfc3339_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class LatestWriter:
    """Writes the newest value handed over per key, on its own threads (`write(key, value)`).
    A key handed over again before its write starts is written once, with the newest value;
    one handed over while it is being written is written again afterwards, so writes of one
    key never overlap and the last value handed over is the last written."""

    def __init__(self, write: Callable[[Any, Any], None], workers: int, name: str):
        self._write = write
        self._queue = WorkQueue()
        self._latest: dict[str, tuple[Any, Any]] = {}  # the queue's key -> (the caller's key, value) to write
        self._unwritten: set[str] = set()  # handed over, the newest value not written yet
        self._idle = threading.Condition()
        for i in range(workers):
            threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True).start()

    def put(self, key: Any, value: Any) -> None:
        token = repr(key)
        with self._idle:
            self._latest[token] = (key, value)
            self._unwritten.add(token)
        self._queue.add(token)

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._unwritten, timeout)

    def close(self) -> None:
        self._queue.close()

    def _run(self) -> None:
        while True:
            token = self._queue.get()
            if token is None:
                return
            with self._idle:
                item = self._latest.pop(token, None)
            try:
                if item is not None:
                    self._write(*item)
            except Exception:  # one object's write must not end the lane
                log.exception("writing %s failed", item[0] if item else token)
            finally:
                with self._idle:
                    if token not in self._latest:  # not handed over again meanwhile
                        self._unwritten.discard(token)
                        self._idle.notify_all()
                self._queue.done(token)


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
