"""Reflector events into the scheduler's `ClusterCache`, and the assumed pods of in-flight binds.

One lock serialises cache changes: the reflector threads hold it per event, the scheduling
loop holds it for a whole cycle, so a session sees a consistent cache.

Assume-then-bind (kube-scheduler, Volcano vo#1383): the cycle charges the node in the cache,
the bind runs later on a worker. Until the API confirms it, the pod is *assumed*: a watch
update that still shows the pod unbound (a label change, a stale event) must not put it back
to Pending, or the next cycle would place it a second time (Volcano vo#1857). Such an update
is applied with the assumed node filled in. The assumption ends when the API shows the pod
bound, or when the bind fails: the binder then hands over the pod as the API has it now,
which releases the node, and the pod is retried in a later cycle.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from central.errors import InputError
from central.kube.informer import Handler

log = logging.getLogger(__name__)


class CacheFeeder:
    def __init__(self, cache: Any, scheduler_name: str = "volcano"):
        self.cache = cache
        self.scheduler_name = scheduler_name
        self.lock = threading.RLock()
        self.assumed: dict[str, str] = {}  # pod key -> node, binds not yet confirmed
        self.rejected = 0  # objects the cache refused (malformed); logged, never fatal
        self.events = 0

    def handler(self, kind: str) -> Handler:
        """The reflector handler for objects of `kind` (list items and watch objects alike)."""
        def on_event(event: str, obj: dict[str, Any]) -> None:
            obj.setdefault("kind", kind)
            self.on_event(event, obj)
        return on_event

    def on_event(self, event: str, obj: dict[str, Any]) -> None:
        kind = obj["kind"]
        meta = obj["metadata"]
        with self.lock:
            self.events += 1
            if event == "DELETED":
                if kind == "Pod":
                    self.assumed.pop(f"{meta.get('namespace')}/{meta['name']}", None)
                self.cache.delete(kind, meta.get("namespace"), meta["name"])
                return
            if kind == "Pod":
                obj = self._pod_view(obj)
                if obj is None:
                    return
            try:
                self.cache.apply(obj)
            except InputError as err:
                self.rejected += 1
                log.warning("ignoring %s: %s", kind, err)

    def _pod_view(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod as the cache should see it, or None for pods that are none of our business."""
        spec = pod.get("spec") or {}
        key = f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        if spec.get("nodeName"):
            self.assumed.pop(key, None)
            return pod
        if spec.get("schedulerName", "default-scheduler") != self.scheduler_name:
            return None  # another scheduler's pending pod: it uses no node yet
        node = self.assumed.get(key)
        if node is None:
            return pod
        return dict(pod, spec=dict(spec, nodeName=node))

    # --- the binder's side --------------------------------------------------------------------

    def assume(self, pod_key: str, node: str) -> None:
        with self.lock:
            self.assumed[pod_key] = node

    def forget(self, pod_key: str, current: dict[str, Any] | None) -> None:
        """A bind failed: drop the assumption and show the cache the pod as the API has it
        (`None` when it is gone), which releases the node unless the pod is in fact bound."""
        with self.lock:
            self.assumed.pop(pod_key, None)
            namespace, name = pod_key.split("/", 1)
            if current is None:
                self.cache.delete("Pod", namespace, name)
            else:
                current.setdefault("kind", "Pod")
                current.setdefault("apiVersion", "v1")
                self.on_event("MODIFIED", current)
