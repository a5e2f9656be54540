"""Reflector events into the scheduler's `ClusterCache`, and the backoff of pods whose bind failed.

One lock serialises cache changes: the reflector threads hold it per event, the scheduling
loop holds it for a whole cycle, and the binder's failure reports take it too, so a session
sees a consistent cache.

Assume-then-bind (kube-scheduler, Volcano #1383): the cycle charges the node in the cache
(the pod is Binding there), the bind runs later on a worker. The cache keeps that record
against watch updates that still show the pod unbound (see `central.model.cache`); it ends
when the API shows the pod bound, or when the bind fails: the binder then reports the pod as
the API has it now (`bind_failed`), which releases the node, and the pod is retried in a
later cycle, after a backoff that doubles with each failure of the same pod (1 s to 10 s, as
kube-scheduler's). A backing-off pod is kept out of the cache (`parked`); its watch updates
are kept for when it is due.

An object the cache cannot read (a quantity beyond int64, a map where a name belongs) is
refused whole: the cache keeps the last good version, or none, and never half of it. The
refusal is logged once per reason, kept in `refused` (object -> reason) until the object is
fixed or deleted, and handed to `on_refused` (the scheduler turns it into a Warning Event).

With `native` (Kubernetes' gang API read, `central.model.nativegang`), PodGroups and pods go
through its view first: native PodGroups reach the cache as Caldera PodGroups, and pods that
name one as its tasks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from central.errors import InputError
from central.kube.informer import Handler
from central.model.cache import ClusterCache
from central.model.fields import object_ref
from central.model.nativegang import NativeGroups

log = logging.getLogger(__name__)


class CacheFeeder:
    def __init__(self, cache: ClusterCache, scheduler_name: str = "volcano", clock: Callable[[], float] = time.monotonic,
                 on_refused: Callable[[dict[str, Any], str], None] | None = None, native: bool = False):
        self.cache = cache
        self.native = NativeGroups(cache) if native else None
        self.on_refused = on_refused
        self.scheduler_name = scheduler_name
        self.clock = clock
        self.lock = threading.RLock()
        self.parked: dict[str, tuple[float, dict[str, Any]]] = {}  # pod key -> (until, latest pod): backing off
        self.rejected = 0  # objects the cache refused (malformed); logged, never fatal
        self.refused: dict[str, str] = {}  # "Kind ns/name" -> why the cache holds no current version of it
        self.events = 0
        self.arrived = threading.Event()  # a new pod of ours waits for a node: the loop starts a cycle sooner
        self.gangs_wait = False  # the configuration has gang: see _may_place (set by the loop each cycle)

    def handler(self, kind: str) -> Handler:
        """The reflector handler for objects of `kind` (list items and watch objects alike)."""
        def on_event(event: str, obj: dict[str, Any]) -> None:
            obj.setdefault("kind", kind)
            self.on_event(event, obj)
        return on_event

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        kind = obj["kind"]
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return self._refuse(obj, "metadata.name: is required")
        with self.lock:
            self.events += 1
            if self.native is not None:
                try:
                    seen = self.native.view(event, obj)
                except InputError as err:
                    return self._refuse(obj, str(err))
                if seen is None:
                    return
                event, obj = seen
            if event == "DELETED":
                self.refused.pop(object_ref(obj), None)
                if kind == "Pod":
                    self.parked.pop(f"{meta.get('namespace')}/{meta['name']}", None)
                self.cache.delete(kind, meta.get("namespace"), meta["name"])
                return
            new_pod = False
            if kind == "Pod":
                shown = self._pod_view(obj)
                if shown is None:
                    return
                obj = shown
                # not on MODIFIED: the scheduler's own condition writes would wake it
                new_pod = event == "ADDED" and not (obj.get("spec") or {}).get("nodeName")
            try:
                self.cache.apply(obj)
            except InputError as err:
                self._refuse(obj, str(err).removeprefix(f"{object_ref(obj)}: "))
            else:
                self.refused.pop(object_ref(obj), None)
                if new_pod and self._may_place(obj["metadata"]):
                    self.arrived.set()

    def _may_place(self, meta: dict[str, Any]) -> bool:
        """Could a cycle now place the new pod? Not while gang holds its job back for want of
        pods (fewer exist than its minAvailable): a gang filling at 100 pods/s would otherwise
        start a cycle every gap for nothing, and the cycle it needs would wait behind them. The
        period's cycle still comes, as Volcano's does."""
        if not self.gangs_wait:
            return True
        task = self.cache.tasks.get(f"{meta.get('namespace')}/{meta['name']}")
        job = self.cache.jobs.get(task.job_uid) if task is not None else None
        return job is None or len(job.tasks) >= job.min_available

    def _refuse(self, obj: dict[str, Any], reason: str) -> None:
        ref = object_ref(obj)
        self.rejected += 1
        if self.refused.get(ref) != reason:  # once per reason, not once per resync
            log.warning("not scheduling with %s: %s", ref, reason)
            self.refused[ref] = reason
            meta = obj.get("metadata")
            if self.on_refused is not None and isinstance(meta, dict) and isinstance(meta.get("name"), str):
                self.on_refused(obj, reason)

    def _pod_view(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod as the cache should see it, or None for pods that are none of our business
        or backing off."""
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        key = f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        if spec.get("nodeName"):
            self.parked.pop(key, None)
            return pod
        if spec.get("schedulerName", "default-scheduler") != self.scheduler_name:
            return None  # another scheduler's pending pod: it uses no node yet
        if key in self.parked:
            self.parked[key] = (self.parked[key][0], pod)  # keep the latest, show it when due
            return None
        return pod

    # --- the binder's reports -----------------------------------------------------------------

    def bind_failed(self, pod_key: str, current: dict[str, Any] | None, backoff: float = 0.0) -> None:
        """A bind failed: show the cache the pod as the API has it (`None` when it is gone). A
        pod still unbound leaves the cache first, which ends its bind in flight and releases
        the node. With `backoff`, such a pod is kept out of the cache that long
        (kube-scheduler's backoff queue), so a bind the API keeps refusing is not retried
        every cycle."""
        with self.lock:
            namespace, name = pod_key.split("/", 1)
            bound = current is not None and bool((current.get("spec") or {}).get("nodeName"))
            if not bound:
                self.cache.delete("Pod", namespace, name)
                self.cache.dra.forget(pod_key)  # the claim allocations its bind was writing
            if current is None:
                return
            current.setdefault("kind", "Pod")
            current.setdefault("apiVersion", "v1")
            if backoff > 0 and not bound:
                self.parked[pod_key] = (self.clock() + backoff, current)
                return
            self.on_event("MODIFIED", current)

    def unpark_due(self) -> None:
        """Give the cache back the pods whose backoff has passed (before each cycle)."""
        with self.lock:
            now = self.clock()
            for key in [k for k, (until, _) in self.parked.items() if until <= now]:
                self.on_event("MODIFIED", self.parked.pop(key)[1])
