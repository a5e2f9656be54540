"""Reflector events into the scheduler's `ClusterCache`, and the assumed pods of in-flight binds.

One lock serialises cache changes: the reflector threads hold it per event, the scheduling
loop holds it for a whole cycle, so a session sees a consistent cache.

Assume-then-bind (kube-scheduler, Volcano #1383): the cycle charges the node in the cache,
the bind runs later on a worker. Until the API confirms it, the pod is *assumed*: a watch
update that still shows the pod unbound (a label change, a stale event) must not put it back
to Pending, or the next cycle would place it a second time (Volcano #1857). Such an update
is applied with the assumed node filled in. The assumption ends when the API shows the pod
bound, or when the bind fails: the binder then hands over the pod as the API has it now,
which releases the node, and the pod is retried in a later cycle, after a backoff that
doubles with each failure of the same pod (1 s to 10 s, as kube-scheduler's).

An object the cache cannot read (a quantity beyond int64, a map where a name belongs) is
refused whole: the cache keeps the last good version, or none, and never half of it. The
refusal is logged once per reason, kept in `refused` (object -> reason) until the object is
fixed or deleted, and handed to `on_refused` (the scheduler turns it into a Warning Event).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from central.errors import InputError
from central.kube.informer import Handler
from central.model.fields import object_ref

log = logging.getLogger(__name__)


class CacheFeeder:
    def __init__(self, cache: Any, scheduler_name: str = "volcano", clock: Callable[[], float] = time.monotonic,
                 on_refused: Callable[[dict[str, Any], str], None] | None = None):
        self.cache = cache
        self.on_refused = on_refused
        self.scheduler_name = scheduler_name
        self.clock = clock
        self.lock = threading.RLock()
        self.assumed: dict[str, str] = {}  # pod key -> node, binds not yet confirmed
        self.parked: dict[str, tuple[float, dict[str, Any]]] = {}  # pod key -> (until, latest pod): backing off
        self.rejected = 0  # objects the cache refused (malformed); logged, never fatal
        self.refused: dict[str, str] = {}  # "Kind ns/name" -> why the cache holds no current version of it
        self.events = 0

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
            if event == "DELETED":
                self.refused.pop(object_ref(obj), None)
                if kind == "Pod":
                    self.assumed.pop(f"{meta.get('namespace')}/{meta['name']}", None)
                    self.parked.pop(f"{meta.get('namespace')}/{meta['name']}", None)
                self.cache.delete(kind, meta.get("namespace"), meta["name"])
                return
            if kind == "Pod":
                obj = self._pod_view(obj)
                if obj is None:
                    return
            try:
                self.cache.apply(obj)
            except InputError as err:
                self._refuse(obj, str(err).removeprefix(f"{object_ref(obj)}: "))
            else:
                self.refused.pop(object_ref(obj), None)

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
        """The pod as the cache should see it, or None for pods that are none of our business."""
        spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
        key = f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        if spec.get("nodeName"):
            self.assumed.pop(key, None)
            self.parked.pop(key, None)
            return pod
        if spec.get("schedulerName", "default-scheduler") != self.scheduler_name:
            return None  # another scheduler's pending pod: it uses no node yet
        if key in self.parked:
            self.parked[key] = (self.parked[key][0], pod)  # keep the latest, show it when due
            return None
        node = self.assumed.get(key)
        if node is None:
            return pod
        return dict(pod, spec=dict(spec, nodeName=node))

    # --- the binder's side --------------------------------------------------------------------

    def assume(self, pod_key: str, node: str) -> None:
        with self.lock:
            self.assumed[pod_key] = node

    def forget(self, pod_key: str, current: dict[str, Any] | None, backoff: float = 0.0) -> None:
        """A bind failed: drop the assumption and show the cache the pod as the API has it
        (`None` when it is gone), which releases the node unless the pod is in fact bound.
        With `backoff`, a still-unbound pod is kept out of the cache that long (kube-scheduler's
        backoff queue), so a bind the API keeps refusing is not retried every cycle."""
        with self.lock:
            self.assumed.pop(pod_key, None)
            namespace, name = pod_key.split("/", 1)
            if current is None:
                self.cache.delete("Pod", namespace, name)
                return
            current.setdefault("kind", "Pod")
            current.setdefault("apiVersion", "v1")
            if backoff > 0 and not (current.get("spec") or {}).get("nodeName"):
                self.cache.delete("Pod", namespace, name)
                self.parked[pod_key] = (self.clock() + backoff, current)
                return
            self.on_event("MODIFIED", current)

    def unpark_due(self) -> None:
        """Give the cache back the pods whose backoff has passed (before each cycle)."""
        with self.lock:
            now = self.clock()
            for key in [k for k, (until, _) in self.parked.items() if until <= now]:
                self.on_event("MODIFIED", self.parked.pop(key)[1])
