"""Test doubles at the adapter's boundary: a cache that records, and a first-fit cycle.

They stand in for the scheduling core only in tests of the adapter itself (what reaches the
cache, what the sink sends); `test_scheduler_core.py` runs the real core end to end.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from central.model.drastore import DraStore


class RecordingCache:
    """Keeps the latest object per (kind, key), as `ClusterCache.apply/delete` would see them.

    As the real cache keeps a bind in flight, a pod the cycle bound (`binding`) stays on its
    node against updates that do not show it bound yet, until one does or the pod is deleted."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.binding: dict[str, str] = {}  # pod key -> node
        self.applied = 0
        self.dra = DraStore()  # no claims: what the feeder's failed-bind report asks of it

    def apply(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        if obj["kind"] == "Pod" and key in self.binding:
            if obj["spec"].get("nodeName"):
                del self.binding[key]
            else:
                obj = dict(obj, spec=dict(obj["spec"], nodeName=self.binding[key]))
        self.objects[(obj["kind"], key)] = obj
        self.applied += 1

    def bind(self, key: str, node: str) -> None:
        """What the core's commit does: the pod is charged on the node while the bind is in flight."""
        pod = self.objects[("Pod", key)]
        self.objects[("Pod", key)] = dict(pod, spec=dict(pod["spec"], nodeName=node))
        self.binding[key] = node

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        key = f"{namespace}/{name}" if namespace else name
        self.objects.pop((kind, key), None)
        if kind == "Pod":
            self.binding.pop(key, None)

    def of(self, kind: str) -> dict[str, dict[str, Any]]:
        return {key: obj for (k, key), obj in self.objects.items() if k == kind}


def result(binds: dict[str, str] | None = None, pending: dict[str, str] | None = None) -> SimpleNamespace:
    """The parts of the core's CycleResult the adapter reads."""
    return SimpleNamespace(binds=binds or {}, pending_reasons=pending or {}, evictions={}, timings={}, faults=[],
                           unschedulable={}, events=[], device_claims={}, invalid_job_pods=set())


def first_fit_cycle(cache: RecordingCache, conf: Any, sink: Any) -> SimpleNamespace:
    """Bind each unbound pod to the first node with a free pod slot, charging the cache first
    (the core's contract with the sink)."""
    used: dict[str, int] = {}
    for pod in cache.of("Pod").values():
        node = pod["spec"].get("nodeName")
        if node:
            used[node] = used.get(node, 0) + 1
    binds, pending = {}, {}
    nodes = sorted(cache.of("Node").items())
    for key, pod in sorted(cache.of("Pod").items()):
        if pod["spec"].get("nodeName"):
            continue
        for name, node in nodes:
            if used.get(name, 0) < int(node["status"]["allocatable"]["pods"]):
                used[name] = used.get(name, 0) + 1
                cache.bind(key, name)
                sink.bind(key, name)
                binds[key] = name
                break
        else:
            pending[key] = f"0/{len(nodes)} nodes are available: {len(nodes)} Too many pods."
    return result(binds, pending)
