"""Statements: the undo log that makes gang scheduling all-or-nothing.

Operations apply to the session at once (so the next task sees the node's new idle), and
`discard()` replays the log backwards. `commit()` turns allocations into binds and evictions
into evictions; pipelines stay in the session only, as in Volcano.
"""

from __future__ import annotations

from collections.abc import Sequence

from central.errors import InputError
from central.framework.decisions import Decisions
from central.framework.points import Points
from central.model.cache import ClusterCache
from central.model.objects import NodeInfo, TaskInfo, TaskStatus

ALLOCATE, PIPELINE, EVICT = "allocate", "pipeline", "evict"


class Statement:
    __slots__ = ("cache", "points", "decisions", "ops", "closed")

    def __init__(self, cache: ClusterCache, points: Points, decisions: Decisions):
        self.cache, self.points, self.decisions = cache, points, decisions
        self.ops: list[tuple[str, TaskInfo, TaskStatus, str | None, str]] = []
        self.closed = False
        decisions.open.append(self)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self._apply(ALLOCATE, task, TaskStatus.ALLOCATED, node.name, "")

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self._apply(PIPELINE, task, TaskStatus.PIPELINED, node.name, "")

    def evict(self, task: TaskInfo, reason: str) -> None:
        self._apply(EVICT, task, TaskStatus.RELEASING, task.node, reason)

    def allocate_run(self, tasks: Sequence[TaskInfo], nodes: Sequence[NodeInfo]) -> None:
        """`allocate(tasks[i], nodes[i])` for each in turn, for pending pods of one template and
        one job with nothing asked in between (a batch placement's run): the cache records the
        run at once, and where every listening plugin takes runs it is told once. If a plugin
        refuses, the run is undone and done again pod by pod, which refuses where it did."""
        points = self.points
        tell, undo = points.on_allocate_run, points.on_deallocate_run
        if tell is None or undo is None or len(tasks) == 1:
            for task, node in zip(tasks, nodes, strict=True):
                self.allocate(task, node)
            return
        self.cache.allocate_run(tasks, nodes)
        told = 0
        try:
            for fn in tell:
                fn(tasks)
                told += 1
        except InputError:
            for fn in reversed(undo[:told]):
                fn(tasks)
            for task in reversed(tasks):
                self.cache.set_status(task, TaskStatus.PENDING, None)
            for task, node in zip(tasks, nodes, strict=True):
                self.allocate(task, node)
            return
        self.ops.extend((ALLOCATE, task, TaskStatus.PENDING, None, "") for task in tasks)

    def merge(self, other: Statement) -> None:
        """Take over `other`'s operations (a sub-statement that succeeded)."""
        self.ops.extend(other.ops)
        other.ops = []
        other._close()

    def discard(self) -> None:
        points, decisions = self.points, self.decisions
        while self.ops:  # popped one by one: a discard cut short resumes where it stopped
            kind, task, status, node, _ = self.ops.pop()
            self.cache.set_status(task, status, node)
            for fn in points.on_allocate if kind == EVICT else points.on_deallocate:
                fn(task)
            if kind != EVICT:
                decisions.discarded[task.uid] = kind
        self._close()

    def commit(self) -> None:
        decisions = self.decisions
        for kind, task, _, _, reason in self.ops:
            if kind == EVICT:
                decisions.evictions[task.uid] = reason
            elif kind == ALLOCATE:
                self.cache.set_status(task, TaskStatus.BINDING, task.node)
                decisions.binds[task.uid] = task.node or ""
            else:
                decisions.pipelines.append(task)
        self.ops = []
        self._close()

    def _apply(self, kind: str, task: TaskInfo, status: TaskStatus, node: str | None, reason: str) -> None:
        """Apply one operation whole or not at all: if a plugin refuses it (bad data of the
        task), the plugins already told are told the undo, and the task is put back."""
        was = (task.status, task.node)
        self.cache.set_status(task, status, node)
        points = self.points
        # the same plugins, index for index: what `told` reached is undone from `undo`
        tell, undo = (points.on_deallocate, points.on_allocate) if kind == EVICT else (
            points.on_allocate, points.on_deallocate)
        told = 0
        try:
            for fn in tell:
                fn(task)
                told += 1
        except InputError:
            for fn in reversed(undo[:told]):
                fn(task)
            self.cache.set_status(task, *was)
            raise
        self.ops.append((kind, task, was[0], was[1], reason))

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.decisions.open.remove(self)
