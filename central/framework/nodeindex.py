"""Lookups over nodes that predicates and scores share (kept across sessions until a Node changes).

Label values per key and taint groups are laid out as arrays over node rows, so a selector
or a toleration is evaluated once per distinct value or taint set, not once per node. Placed
tasks (bound, allocated, pipelined or releasing) are indexed by row for the inter-pod checks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence

import numpy as np

from central.model.objects import NodeInfo, PodAffinityTerm, Selector, Taint, TaskInfo, Toleration

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", None, "NoSchedule")


class NodeIndex:
    def __init__(self, nodes: Sequence[NodeInfo]):
        self.nodes = nodes
        self.n = len(nodes)
        self._labels: dict[str, np.ndarray] = {}
        groups: dict[tuple[Taint, ...], int] = {}
        self.taint_group = np.fromiter((groups.setdefault(n.taints, len(groups)) for n in nodes), np.int64, self.n)
        self.taint_sets = list(groups)
        self.unschedulable = np.fromiter((n.unschedulable for n in nodes), bool, self.n)
        self.taint_group.flags.writeable = self.unschedulable.flags.writeable = False  # sessions share them

    def label(self, key: str) -> np.ndarray:
        """Object array of each node's value for `key` (None where the node lacks it)."""
        values = self._labels.get(key)
        if values is None:
            if key == "metadata.name":
                values = np.array([n.name for n in self.nodes], dtype=object)
            else:
                values = np.array([n.labels.get(key) for n in self.nodes], dtype=object)
            values.flags.writeable = False
            self._labels[key] = values
        return values

    def matches(self, selector: Selector) -> np.ndarray:
        """Rows whose labels satisfy `selector` (all its requirements)."""
        ok = np.ones(self.n, dtype=bool)
        for req in selector.requirements:
            values = self.label(req.key)
            distinct = {v for v in values}
            good = {v for v in distinct if req.matches({} if v is None else {req.key: v})}
            ok &= np.fromiter((v in good for v in values), bool, self.n)
        return ok

    def per_taint_group(self, fn: Callable[[tuple[Taint, ...]], float]) -> np.ndarray:
        """Evaluate fn(taints) once per distinct taint set, spread over rows."""
        per_group = np.array([fn(taints) for taints in self.taint_sets] or [0])
        return per_group[self.taint_group] if self.n else per_group[:0]


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], effects: tuple[str, ...]) -> int:
    return sum(1 for t in taints if t.effect in effects and not any(tol.tolerates(t) for tol in tolerations))


def placed_tasks(nodes: Sequence[NodeInfo], gone: Collection[str] = ()) -> Iterator[tuple[int, TaskInfo]]:
    """(row, task) for every task on a node, except the uids in `gone`."""
    for node in nodes:
        for task in node.tasks.values():
            if task.uid not in gone:
                yield node.index, task


def domain_counts(index: NodeIndex, term_key: str, matching_rows: list[int]) -> dict[object, int]:
    """How many matching pods each topology domain (value of `term_key`) holds."""
    values = index.label(term_key)
    counts: dict[object, int] = {}
    for row in matching_rows:
        value = values[row]
        if value is not None:
            counts[value] = counts.get(value, 0) + 1
    return counts


def term_rows(nodes: Sequence[NodeInfo], term: PodAffinityTerm, own_namespace: str, gone: Collection[str] = ()) -> list[int]:
    """Rows of the placed pods that `term` selects (one entry per pod), except the uids in `gone`."""
    return [row for row, task in placed_tasks(nodes, gone)
            if term.selects(task.namespace, task.template.label_map, own_namespace)]
