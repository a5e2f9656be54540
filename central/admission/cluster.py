"""The existing objects admission decides against: queues, PodGroups and namespaces.

Queues `root` and `default` always exist (Open) even when not given, as the scheduler creates
them at start. A queue's parent is `spec.parent`, or `root` for every queue but root itself;
its state is `status.state` (or `spec.state` in a hand-written manifest), Open when unset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from central.errors import InputError
from central.model.annotations import ALLOWED_NAMESPACES, namespaces

ROOT = "root"
DEFAULT_QUEUE = "default"


def implicit_queue(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1, "reclaimable": True}
    if name != ROOT:
        spec["parent"] = ROOT
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": "Open"},
    }


def _map(obj: Any, key: str) -> Mapping[str, Any]:
    """obj[key] when both are maps, else {}: existing objects are read, never trusted to be well formed."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_map(obj, "metadata").get("name") or "")


def podgroup_queue(obj: Mapping[str, Any]) -> str | None:
    """The queue a PodGroup (or a Volcano Job, standing for the PodGroup its controller makes)
    holds a place in; None for any other object."""
    kind = obj.get("kind")
    if kind == "PodGroup" or kind == "Job" and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        return str(_map(obj, "spec").get("queue") or DEFAULT_QUEUE)
    return None


@dataclass(frozen=True)
class Cluster:
    """What admission decides against. PodGroups are only counted per queue: no rule needs more,
    and a count is cheap to keep current (central.admission.webhook.ClusterView)."""

    queues: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    podgroups: dict[str, int] = field(default_factory=dict)  # queue -> PodGroups in it
    namespaces: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A copy: the caller's dict (say, an informer's cache) is never written to.
        object.__setattr__(self, "queues", {**{n: implicit_queue(n) for n in (ROOT, DEFAULT_QUEUE)}, **self.queues})

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> Cluster:
        queues: dict[str, Mapping[str, Any]] = {}
        podgroups: dict[str, int] = {}
        namespaces: dict[str, Mapping[str, Any]] = {}
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Queue":
                queues[_name(obj)] = obj
            elif kind == "Namespace":
                namespaces[_name(obj)] = obj
            elif (queue := podgroup_queue(obj)) is not None:
                podgroups[queue] = podgroups.get(queue, 0) + 1
        return cls(queues, podgroups, namespaces)

    def with_queue(self, queue: Mapping[str, Any]) -> Cluster:
        """The cluster after `queue` is created or replaced."""
        return replace(self, queues={**self.queues, _name(queue): queue})

    def with_podgroup(self, podgroup: Mapping[str, Any]) -> Cluster:
        queue = podgroup_queue(podgroup) or DEFAULT_QUEUE
        return replace(self, podgroups={**self.podgroups, queue: self.podgroups.get(queue, 0) + 1})

    def state(self, name: str) -> str:
        queue = self.queues[name]
        # status.state is the real one; a hand-written manifest may put it in spec.state.
        return str(_map(queue, "status").get("state") or _map(queue, "spec").get("state") or "Open")

    def parent(self, name: str) -> str | None:
        if name == ROOT:
            return None
        return str(_map(self.queues[name], "spec").get("parent") or ROOT)

    def children(self, name: str) -> list[str]:
        return sorted(q for q in self.queues if q != name and self.parent(q) == name)

    def podgroups_in(self, queue: str) -> int:
        return self.podgroups.get(queue, 0)

    def refusing_queue(self, name: str, namespace: str) -> str | None:
        """The queue on the way from `name` to root whose tenants exclude `namespace`, if any
        (annotation caldera.sh/allowed-namespaces; an unreadable one admits no namespace)."""
        seen: set[str] = set()
        while name in self.queues and name not in seen:
            text = _map(_map(self.queues[name], "metadata"), "annotations").get(ALLOWED_NAMESPACES)
            if text is not None:
                try:
                    tenants = namespaces(text)
                except InputError:
                    return name
                if tenants is not None and namespace not in tenants:
                    return name
            seen.add(name)
            name = self.parent(name) or ""
        return None

    def namespace_queue(self, namespace: str) -> str | None:
        annotations = _map(_map(self.namespaces.get(namespace), "metadata"), "annotations")
        value = annotations.get("scheduling.volcano.sh/queue-name")
        return value if isinstance(value, str) else None
