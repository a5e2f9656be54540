"""Statements: the undo log that makes gang scheduling all-or-nothing.

Operations apply to the session at once (so the next task sees the node's new idle), and
`discard()` replays the log backwards. `commit()` turns allocations into binds and evictions
into evictions; pipelines stay in the session only, as in Volcano.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from central.errors import InputError
from central.model.objects import NodeInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.session import Session

ALLOCATE, PIPELINE, EVICT = "allocate", "pipeline", "evict"


class Statement:
    __slots__ = ("ssn", "ops", "closed")

    def __init__(self, ssn: "Session"):
        self.ssn = ssn
        self.ops: list[tuple[str, TaskInfo, TaskStatus, str | None, str]] = []
        self.closed = False
        ssn.open_statements.append(self)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self._apply(ALLOCATE, task, TaskStatus.ALLOCATED, node.name, "")

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self._apply(PIPELINE, task, TaskStatus.PIPELINED, node.name, "")

    def evict(self, task: TaskInfo, reason: str) -> None:
        self._apply(EVICT, task, TaskStatus.RELEASING, task.node, reason)

    def merge(self, other: "Statement") -> None:
        """Take over `other`'s operations (a sub-statement that succeeded)."""
        self.ops.extend(other.ops)
        other.ops = []
        other._close()

    def discard(self) -> None:
        ssn = self.ssn
        while self.ops:  # popped one by one: a discard cut short resumes where it stopped
            kind, task, status, node, _ = self.ops.pop()
            ssn.cache.set_status(task, status, node)
            ssn.points.notify("on_allocate" if kind == EVICT else "on_deallocate", task)
            if kind != EVICT:
                ssn.last_transaction[task.uid] = kind
        self._close()

    def commit(self) -> None:
        ssn = self.ssn
        for kind, task, _, _, reason in self.ops:
            if kind == EVICT:
                ssn.evictions[task.uid] = reason
            elif kind == ALLOCATE:
                ssn.cache.set_status(task, TaskStatus.BINDING, task.node)
                ssn.binds[task.uid] = task.node
            else:
                ssn.committed_pipelines.append(task)
        self.ops = []
        self._close()

    def _apply(self, kind: str, task: TaskInfo, status: TaskStatus, node: str | None, reason: str) -> None:
        """Apply one operation whole or not at all: if a plugin refuses it (bad data of the
        task), the plugins already told are told the undo, and the task is put back."""
        ssn = self.ssn
        was = (task.status, task.node)
        ssn.cache.set_status(task, status, node)
        point, undo = ("on_deallocate", "on_allocate") if kind == EVICT else ("on_allocate", "on_deallocate")
        told = 0
        try:
            for fn in ssn.points.flat[point]:
                fn(task)
                told += 1
        except InputError:
            for fn in reversed(ssn.points.flat[point][:told]):
                undone = getattr(fn.__self__, undo, None)
                if undone is not None:
                    undone(task)
            ssn.cache.set_status(task, *was)
            raise
        self.ops.append((kind, task, was[0], was[1], reason))

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.ssn.open_statements.remove(self)
