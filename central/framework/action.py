"""The action contract, and what an action sees of its session.

An action is a class with a `name` (its configuration name), a class method
`read_arguments` that checks its configured `arguments` once, when the configuration loads
(what it returns is the action's `settings` in every session), and `execute`, run once per
session in the configured order over an `ActionHandle`: the session's jobs, queues and
nodes, its placement, statements, queue lines, orderings, votes and gates, and the few
calls through which an action records what it found (notes, faults). An action never
writes the session's own bookkeeping: statements decide, closing reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from central.errors import InputError
from central.framework.decisions import Decisions
from central.framework.faults import Faults, JobBoundary
from central.framework.notes import Notes
from central.framework.ordering import PriorityQueue
from central.framework.placement import Placement
from central.framework.points import Points, victims
from central.framework.statement import Statement
from central.framework.status import Status
from central.model.fields import GO_BOOLS
from central.model.objects import JobInfo, NodeInfo, QueueInfo, TaskInfo
from central.model.subgroups import SubGroup
from central.model.topology import HyperNode
from central.resources.vectors import Dimensions


class Action:
    name: ClassVar[str] = ""
    # argument -> type (bool or int, non-negative), Volcano's names; None: every key is taken as is
    arguments: ClassVar[Mapping[str, type] | None] = None
    # may it decide something with no pod waiting (evict running ones)? A simulation then
    # runs cycles after any change, not only while pods wait
    acts_on_running: ClassVar[bool] = False

    def __init__(self, settings: Any):
        self.settings = settings  # what `read_arguments` made of the configured arguments, at load

    @classmethod
    def read_arguments(cls, raw: Mapping[str, Any], where: str) -> Any:
        """Check the configured arguments (`where` names them in errors) against `arguments`;
        InputError names the key. What it returns is `settings`."""
        known = cls.arguments
        if known is None:
            return raw
        settings = dict(raw)
        for key, value in raw.items():
            kind = known.get(key)
            if kind is None:
                raise InputError(f"{where}.{key}", f"unknown argument of {cls.name}; valid: {', '.join(sorted(known))}")
            if kind is bool and isinstance(value, str) and value in GO_BOOLS:  # "true", as Volcano's GetBool reads it
                settings[key] = GO_BOOLS[value]
            elif kind is bool and not isinstance(value, bool):
                raise InputError(f"{where}.{key}", f"expected true or false, got {value!r}")
            if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InputError(f"{where}.{key}", f"expected a non-negative integer, got {value!r}")
        return settings

    def execute(self, handle: ActionHandle) -> None:
        raise NotImplementedError


class SessionParts(Protocol):
    """What the action handle is made of: the session (`central.framework.session`), which
    this module does not import (the session is the framework's top; nothing it builds on
    names it, not even as a type)."""

    @property
    def actions(self) -> Sequence[str]: ...
    @property
    def queue_gate_admission(self) -> bool: ...
    jobs: dict[str, JobInfo]
    restless: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    nodes: list[NodeInfo]
    dims: Dimensions
    placement: Placement
    points: Points
    faults: Faults
    decisions: Decisions
    notes: Notes

    def statement(self) -> Statement: ...
    def queue_lines(self, jobs: Iterable[JobInfo]) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]: ...
    def job_boundary(self, job: JobInfo, source: str, stmt: Statement | None = None) -> JobBoundary: ...
    def task_less(self, left: TaskInfo, right: TaskInfo) -> bool: ...
    def victim_less(self, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], bool]: ...
    def job_valid(self, job: JobInfo) -> str | None: ...
    def job_ready(self, job: JobInfo) -> bool: ...
    def job_pipelined(self, job: JobInfo) -> bool: ...
    def job_starving(self, job: JobInfo) -> bool: ...
    def job_enqueueable(self, job: JobInfo) -> bool: ...
    def job_enqueued(self, job: JobInfo) -> None: ...
    def overused(self, queue: QueueInfo) -> bool: ...
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status: ...
    def admits_in_row(self, queue: QueueInfo, task: TaskInfo, count: int) -> int: ...
    def allocations_to_ready(self, job: JobInfo) -> int: ...
    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status: ...
    def victim_tasks(self, running: list[TaskInfo]) -> list[tuple[TaskInfo, str]]: ...
    def hypernode_gradients(self, job: JobInfo, group: SubGroup | None = None,
                            within: HyperNode | None = None) -> list[list[HyperNode]] | None: ...
    def eviction_gradients(self, job: JobInfo) -> list[list[HyperNode]] | None: ...


class ActionHandle:
    """What an action sees of its session. Its calls are the session's own bound methods,
    so going through the handle costs nothing per call."""

    def __init__(self, ssn: SessionParts):
        self._faults: Faults = ssn.faults
        self._decisions: Decisions = ssn.decisions
        self.actions: Sequence[str] = ssn.actions  # the configured actions, in order
        self.queue_gate_admission: bool = ssn.queue_gate_admission  # SchedulingGatesQueueAdmission is on
        self.jobs: Mapping[str, JobInfo] = ssn.jobs
        # the jobs not at rest: a job at rest has no pod to place, is admitted and valid
        self.restless: Mapping[str, JobInfo] = ssn.restless
        self.queues = ssn.queues
        self.nodes = ssn.nodes  # by row
        self.dims = ssn.dims
        self.placement = ssn.placement
        self.statement = ssn.statement
        self.queue_lines = ssn.queue_lines
        self.job_boundary = ssn.job_boundary
        # orderings
        self.task_less = ssn.task_less
        self.victim_less = ssn.victim_less
        # votes and gates
        self.job_valid = ssn.job_valid
        self.job_ready = ssn.job_ready
        self.job_pipelined = ssn.job_pipelined
        self.job_starving = ssn.job_starving
        self.job_enqueueable = ssn.job_enqueueable
        self.job_enqueued = ssn.job_enqueued
        self.overused = ssn.overused
        self.allocatable = ssn.allocatable
        self.preemptive = ssn.preemptive
        self.admits_in_row = ssn.admits_in_row  # runs of identical pods (central.framework.plugin)
        self.allocations_to_ready = ssn.allocations_to_ready
        self.victim_tasks = ssn.victim_tasks
        self.hypernode_gradients = ssn.hypernode_gradients
        self.eviction_gradients = ssn.eviction_gradients
        points = ssn.points
        self._hypernode_order = points.hypernode_order
        self._victim_votes = {"preemptable": points.preemptable, "reclaimable": points.reclaimable}
        self._victim_guards = {"preemptable": points.preemptable_guards, "reclaimable": points.reclaimable_guards}
        self._gang_votes = {"preemptable": points.gang_preemptable, "reclaimable": points.gang_reclaimable}
        self._gang_guards = {"preemptable": points.gang_preemptable_guards,
                             "reclaimable": points.gang_reclaimable_guards}
        self.note_job = ssn.notes.note_job  # why the job was held back (the latest note counts)

    def victims(self, point: str, actor: TaskInfo, candidates: list[TaskInfo],
                whole_gangs: bool = False) -> list[TaskInfo]:
        """The victims the `point` ("preemptable" or "reclaimable") tiers allow, then its
        guards (`central.framework.extension.VictimGuard`). With `whole_gangs` (an action
        that keeps gangs whole itself), the votes and guards of plugins that only keep gangs
        at minAvailable are left out (`Plugin.keeps_gangs`)."""
        votes, guards = (self._gang_votes, self._gang_guards) if whole_gangs else (
            self._victim_votes, self._victim_guards)
        chosen = victims(votes[point], actor, candidates)
        for guard in guards[point]:
            chosen = guard.guard_victims(actor, chosen)
        return chosen

    def may_lose(self, point: str, actor: TaskInfo) -> Callable[[TaskInfo], bool]:
        """Could the candidate be among the victims of `point`, whatever the tiers vote (the
        guards' cheap bound)?"""
        guards = self._victim_guards[point]
        return lambda victim: all(guard.may_lose(actor, victim) for guard in guards)

    def hypernode_order(self, job: JobInfo, candidates: list[HyperNode], group: SubGroup | None = None) -> np.ndarray:
        """The summed scores of the candidate HyperNodes (for the job's sub-group `group` when given)."""
        total = np.zeros(len(candidates))
        for fn in self._hypernode_order:
            total += fn(job, candidates, group)
        return total

    def is_faulted(self, job: JobInfo) -> bool:
        return self._faults.job_reason(job) is not None

    def ungate(self, task: TaskInfo) -> None:
        """Its queue admitted the gated task: have its queue-allocation gate removed, after
        the cycle and off it (`central.model.schedulinggate`)."""
        self._decisions.ungated.setdefault(task.uid, None)

    def forget_placement(self, task: TaskInfo) -> None:
        """The task's placements so far were trials: it does not count as placed then
        discarded (its why-pending says why the trials failed)."""
        self._decisions.discarded.pop(task.uid, None)
