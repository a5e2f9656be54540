"""What the statements of one session decided, and what they left open.

Statements (`central.framework.statement`) write it; closing reads it; plugins ask it, through
their handle, whether a task was placed and then discarded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from central.model.objects import TaskInfo


class Discardable(Protocol):
    """An open statement, as what holds it sees it."""

    def discard(self) -> None: ...


@dataclass
class Decisions:
    """What the statements of one session decided, and what they left open."""

    binds: dict[str, str] = field(default_factory=dict)  # task uid -> node
    evictions: dict[str, str] = field(default_factory=dict)  # task uid -> reason
    pipelines: list[TaskInfo] = field(default_factory=list)  # committed pipelines: nominated at close
    discarded: dict[str, str] = field(default_factory=dict)  # task uid -> the placement last discarded
    open: list[Discardable] = field(default_factory=list)  # statements left open: discarded at close
    ungated: dict[str, None] = field(default_factory=dict)  # gated tasks their queue admitted, in order

    def placed_then_discarded(self, task: TaskInfo) -> bool:
        """Did a statement place the task this session and then discard it (it fits a node;
        its gang did not)?"""
        return bool(self.discarded.get(task.uid))
