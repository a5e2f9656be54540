"""A scheduling session: one cycle's view of the cluster, its plugins and its decisions.

Opening a session costs little: it works on the cache's own objects and node table, and
records what it changes. Statements undo what they discard; at close the session hands the
plugins their last word (gang writes why-pending conditions), computes every PodGroup's
phase as Volcano does, and rolls back what is session-only (uncommitted statements and
pipelines), so the cache again mirrors the cluster plus the binds and evictions decided.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from central.resources.vectors import format_value
from central.errors import InputError
from central.framework.conf import SchedulerConf
from central.framework.faults import EVENT_REASON, Fault, JobBoundary
from central.framework.handle import Handle
from central.framework.ordering import PriorityQueue
from central.framework.placement import Placement
from central.framework.plugin import AccountingPlugin, Plugin
from central.framework.points import Points
from central.framework.statement import Statement
from central.model.cache import ClusterCache
from central.model.objects import (
    ALLOCATED_STATUSES,
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)

_session_ids = itertools.count(1)


@dataclass
class CycleResult:
    """What one session decided. Keys are "<namespace>/<name>"."""

    binds: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)  # bound pod -> what plugins chose
    evictions: dict[str, str] = field(default_factory=dict)  # pod -> reason
    pipelined: dict[str, str] = field(default_factory=dict)  # pod -> node, at session end
    nominated: dict[str, str] = field(default_factory=dict)  # preemptors -> node made room on
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)  # every session job's status
    changed_podgroups: set[str] = field(default_factory=set)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending_reasons: dict[str, str] = field(default_factory=dict)  # pod -> why it is not placed
    faults: list[Fault] = field(default_factory=list)  # objects whose data the session could not use
    deserved: dict[str, dict[str, float]] = field(default_factory=dict)  # queue -> share a plugin computed
    deserved_by: str = ""  # that plugin (proportion, capacity); "" when none computes shares
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds
    plugin_timings: dict[tuple[str, str], float] = field(default_factory=dict)  # (plugin, OnSessionOpen|Close) -> s


class Session:
    def __init__(self, cache: ClusterCache, conf: SchedulerConf, now: datetime | None = None):
        self.uid = f"session-{next(_session_ids)}"
        self.cache = cache
        self.conf = conf
        self.now = now or datetime.now(timezone.utc)  # the cycle's clock; injected by tests and simulate
        self.dims = cache.dims
        self.nodes = cache.node_list
        self.total = cache.table.alloc[: len(self.nodes)].sum(axis=0)
        self._undo: list[Callable[[], None]] = []  # what rollback() restores besides task statuses
        missing = [name for name in ("root", cache.default_queue) if name not in cache.queues]
        self._undo.append(lambda: [cache.queues.pop(name, None) for name in missing])
        self.queues: dict[str, QueueInfo] = cache.all_queues()
        self.jobs: dict[str, JobInfo] = {job.uid: job for job in cache.iter_scheduling_jobs()}
        self.opened_as: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        self._saved_jobs = []
        for uid, job in self.jobs.items():
            self.opened_as[uid] = (job.phase or "Pending", job.conditions)
            self._saved_jobs.append((job, job.phase, job.conditions, job.fit_errors))
            job.fit_errors = {}
        cache.journal = []
        self.faults: dict[tuple[str, str], Fault] = {}
        self.faulted_jobs: dict[str, str] = {}  # job uid -> reason
        self.binds: dict[str, str] = {}
        self.evictions: dict[str, str] = {}
        self.committed_pipelines: list[TaskInfo] = []
        self.open_statements: list[Statement] = []
        self.last_transaction: dict[str, str] = {}
        self.job_conditions: dict[str, dict[str, Any]] = {}
        self.job_notes: dict[str, str] = {}  # job uid -> why a gate held it back (for people)
        self.queue_notes: dict[str, str] = {}  # queue -> why its last allocatable check said no, with numbers
        self.pod_annotations: dict[str, dict[str, str]] = {}  # task uid -> annotations plugins chose
        self.placement = Placement(self)
        self.plugin_timings: dict[tuple[str, str], float] = {}
        self.handle = Handle(self)  # what the plugins see of this session
        try:
            self.tiers: list[list[Plugin]] = [[self._open_plugin(conf.registry.plugins[opt.name], opt) for opt in tier]
                                              for tier in conf.tiers]
        except BaseException:
            self.rollback()
            raise
        self.points = Points(self.tiers)

    def _open_plugin(self, cls: type[Plugin], option: Any) -> Plugin:
        started = time.perf_counter()
        plugin = cls(option, self.handle)
        self.plugin_timings[(plugin.name, "OnSessionOpen")] = time.perf_counter() - started
        return plugin

    # --- orderings (fallback: creation time, then uid; tasks: pod index first) ----------------

    # (Points.order inlined: these run for every heap comparison)
    def job_less(self, left: JobInfo, right: JobInfo) -> bool:
        for fn in self.points.flat["job_order"]:
            result = fn(left, right)
            if result:
                return result < 0
        return (left.creation, left.uid) < (right.creation, right.uid)

    def queue_less(self, left: QueueInfo, right: QueueInfo) -> bool:
        for fn in self.points.flat["queue_order"]:
            result = fn(left, right)
            if result:
                return result < 0
        return (left.creation, left.name) < (right.creation, right.name)

    def task_less(self, left: TaskInfo, right: TaskInfo) -> bool:
        for fn in self.points.flat["task_order"]:
            result = fn(left, right)
            if result:
                return result < 0
        return (left.index, left.creation, left.uid) < (right.index, right.creation, right.uid)

    def victim_queue_less(self, left: QueueInfo, right: QueueInfo, preemptor_queue: QueueInfo) -> bool:
        result = self.points.order("victim_queue_order", left, right, preemptor_queue)
        if result:
            return result < 0
        return self.queue_less(right, left)

    def victim_less(self, preemptor: TaskInfo) -> "Callable[[TaskInfo, TaskInfo], bool]":
        """Volcano's victim order: victim queues first (VictimQueueOrder), then the inverse of
        job order, then within a job the inverse of task order (lowest priority goes first)."""
        preemptor_queue = self.queues[self.jobs[preemptor.job_uid].queue]

        def less(left: TaskInfo, right: TaskInfo) -> bool:
            if left.job_uid == right.job_uid:
                return self.task_less(right, left)
            lj, rj = self.jobs[left.job_uid], self.jobs[right.job_uid]
            if lj.queue != rj.queue:
                return self.victim_queue_less(self.queues[lj.queue], self.queues[rj.queue], preemptor_queue)
            return self.job_less(rj, lj)
        return less

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.points.victims("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.points.victims("reclaimable", reclaimer, candidates)

    def can_give_up(self, victim: TaskInfo) -> bool:
        return self.points.all_true("can_give_up", victim)

    # --- votes ------------------------------------------------------------------------------

    def job_valid(self, job: JobInfo) -> str | None:
        faulted = self.faulted_jobs.get(job.uid)
        return faulted if faulted is not None else self.points.first_failure("job_valid", job)

    def job_ready(self, job: JobInfo) -> bool:
        return self.points.all_true("job_ready", job)

    def job_pipelined(self, job: JobInfo) -> bool:
        return self.points.vote("job_pipelined", job)

    def job_starving(self, job: JobInfo) -> bool:
        return self.points.first_tier_all("job_starving", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self.points.vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        self.points.notify("job_enqueued", job)

    def overused(self, queue: QueueInfo) -> bool:
        return self.points.any_true("overused", queue)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.points.all_true("allocatable", queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.points.all_true("preemptive", queue, task)

    def statement(self) -> Statement:
        return Statement(self)

    def queue_lines(self, jobs: Iterable[JobInfo]) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
        """The jobs in one line per queue (JobOrder), and their queues in QueueOrder: what
        Volcano's actions walk, taking one job from the first queue before it goes back."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(self.queue_less)
        lines: dict[str, PriorityQueue[JobInfo]] = {}
        for job in jobs:
            if job.queue not in lines:
                lines[job.queue] = PriorityQueue(self.job_less)
                queues.push(self.queues[job.queue])
            lines[job.queue].push(job)
        return queues, lines

    def annotate(self, task: TaskInfo, key: str, value: str | None) -> None:
        """Record (or with None, withdraw) an annotation for the pod, written before it binds.

        Plugins call this from on_allocate / on_deallocate, so a discarded statement takes
        its annotations back with it."""
        notes = self.pod_annotations.setdefault(task.uid, {})
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value

    # --- fault boundaries (see central.framework.faults) ---------------------------------------

    def job_boundary(self, job: JobInfo, source: str, stmt: Statement | None = None) -> JobBoundary:
        """A `with` block in which bad data of `job` faults the job (discarding `stmt`)."""
        return JobBoundary(self, job, source, stmt)

    def fault_job(self, job: JobInfo, err: InputError, source: str) -> None:
        """The job cannot be scheduled this session: JobValid fails with the reason."""
        reason = str(err)
        self.faulted_jobs.setdefault(job.uid, reason)
        self.faults.setdefault(("PodGroup", job.uid), Fault("PodGroup", job.uid, source, reason))

    def fault_node(self, node: NodeInfo, err: InputError, source: str, exclude: bool = True) -> None:
        """No task is placed on the node this session; with `exclude=False` only reported (the
        plugin has already confined the damage, e.g. to the node's GPUs)."""
        self.faults.setdefault(("Node", node.name), Fault("Node", node.name, source, str(err)))
        if exclude:
            self.placement.exclude(node.index)

    def fault_task(self, task: TaskInfo, err: InputError, source: str) -> None:
        """A pending task faults its job; a placed one is only reported."""
        self.faults.setdefault(("Pod", task.uid), Fault("Pod", task.uid, source, str(err)))
        job = self.jobs.get(task.job_uid)
        if task.status == TaskStatus.PENDING and job is not None:
            self.faulted_jobs.setdefault(job.uid, str(err))

    # --- close ------------------------------------------------------------------------------

    def close(self) -> CycleResult:
        for plugin in (p for tier in self.tiers for p in tier):
            if hasattr(plugin, "on_session_close"):
                started = time.perf_counter()
                plugin.on_session_close()
                self.plugin_timings[(plugin.name, "OnSessionClose")] = time.perf_counter() - started
        for uid, reason in self.faulted_jobs.items():  # after gang's: the fault is the reason that counts
            if self.jobs[uid].count(TaskStatus.PENDING):  # a job with nothing left to place is only reported
                self.job_conditions[uid] = self.condition("Unschedulable", EVENT_REASON, reason)
        result = CycleResult(binds=dict(self.binds), evictions=dict(self.evictions), faults=list(self.faults.values()))
        result.plugin_timings = dict(self.plugin_timings)
        result.annotations = {uid: notes for uid, notes in self.pod_annotations.items() if notes and uid in self.binds}
        for job in self.jobs.values():
            if job.counts.get(TaskStatus.PIPELINED):
                for task in job.tasks.values():
                    if task.status == TaskStatus.PIPELINED:
                        result.pipelined[task.uid] = task.node or ""
            status = self._podgroup_status(job)
            result.podgroups[job.uid] = status
            if not _same_status(status["phase"], status["conditions"], *self.opened_as[job.uid]):
                result.changed_podgroups.add(job.uid)
            job.phase, job.conditions = status["phase"], status["conditions"]
            result.pending_reasons.update(self._pending_reasons(job))
        for statement in reversed(list(self.open_statements)):
            statement.discard()
        for task in self.committed_pipelines:
            if task.status == TaskStatus.PIPELINED:
                self._undo.append(lambda task=task, was=task.nominated_node: setattr(task, "nominated_node", was))
                task.nominated_node = result.nominated[task.uid] = task.node
                self.cache.set_status(task, TaskStatus.PENDING, None)
        result.queues = self._queue_statuses()
        self._deserved(result)
        self.cache.journal = None
        return result

    def recall(self, plugin: str, key: str) -> Any:
        """What `plugin` remembered under `key` in an earlier session (None: nothing)."""
        return self.cache.plugin_memory.get((plugin, key))

    def remember(self, plugin: str, key: str, value: Any) -> None:
        """Keep `value` for `plugin` beyond this session: in the cache, which lives as long as
        the scheduler (or the simulation) does; a rolled back session takes it back."""
        memory, slot = self.cache.plugin_memory, (plugin, key)
        if slot in memory:
            was = memory[slot]
            self._undo.append(lambda: memory.__setitem__(slot, was))
        else:
            self._undo.append(lambda: memory.pop(slot, None))
        memory[slot] = value

    def rollback(self) -> None:
        """Put the cache back exactly as this session found it: every task status and node
        charge (from the cache's journal, newest first), job phases, conditions and fit
        errors, nominations, and what plugins `remember`ed."""
        cache = self.cache
        journal, cache.journal = cache.journal or [], None
        for i in range(len(journal) - 3, -1, -3):
            cache.set_status(journal[i], journal[i + 1], journal[i + 2])
        for undo in reversed(self._undo):
            undo()
        for job, phase, conditions, fit_errors in self._saved_jobs:
            job.phase, job.conditions, job.fit_errors = phase, conditions, fit_errors

    def condition(self, kind: str, reason: str, message: str) -> dict[str, Any]:
        """A PodGroup condition stamped by this session."""
        return {"type": kind, "status": "True", "transitionID": self.uid, "reason": reason, "message": message,
                "lastTransitionTime": self._stamp}

    @cached_property
    def _stamp(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _podgroup_status(self, job: JobInfo) -> dict[str, Any]:
        """Volcano's jobStatus: the phase a PodGroup ends the session in."""
        conditions = list(job.conditions)
        new = self.job_conditions.get(job.uid)
        if new is not None:
            conditions = [c for c in conditions if c.get("type") != new["type"]] + [new]
        unschedulable = new is not None and new["type"] == "Unschedulable"
        counts = job.counts
        running = counts.get(TaskStatus.RUNNING, 0)
        succeeded, failed = counts.get(TaskStatus.SUCCEEDED, 0), counts.get(TaskStatus.FAILED, 0)
        # Volcano's newest rule: scheduled means Bound, Running, Succeeded or Failed (what this
        # session allocated or is binding does not count yet), plus Releasing pods still on a node.
        scheduled = counts.get(TaskStatus.BOUND, 0) + running + succeeded + failed
        if counts.get(TaskStatus.RELEASING):
            scheduled += sum(1 for t in job.tasks.values() if t.status == TaskStatus.RELEASING and t.node)
        phase = job.phase or "Pending"
        if running and unschedulable:
            phase = "Unknown"
        elif scheduled >= job.min_available:
            phase = "Completed" if succeeded + failed == scheduled else "Running"
        elif phase != "Inqueue":
            phase = "Pending"
        return {"phase": phase, "conditions": conditions, "running": running, "succeeded": succeeded, "failed": failed}

    def _pending_reasons(self, job: JobInfo) -> dict[str, str]:
        if not job.counts.get(TaskStatus.PENDING) and not job.fit_errors:
            return {}
        reasons = {}
        faulted = self.faulted_jobs.get(job.uid)
        if faulted is not None:
            return {task.uid: f"PodGroup {job.uid} cannot be scheduled: {faulted}"
                    for task in job.tasks.values() if task.status == TaskStatus.PENDING}
        for uid, errors in job.fit_errors.items():
            reasons[uid] = str(errors)
        for task in job.tasks.values():
            if task.status == TaskStatus.PENDING and task.uid not in reasons:
                if self.last_transaction.get(task.uid):
                    reasons[task.uid] = "Schedulable: fits a node, but the gang is not ready"
                elif job.pending_phase:
                    why = self.job_notes.get(job.uid, "waiting for the enqueue action")
                    reasons[task.uid] = f"PodGroup {job.uid} is not admitted yet: {why}"
                elif job.fit_errors:  # not tried: a twin of the same template already found no node
                    first = next(iter(job.fit_errors.values()))
                    reasons[task.uid] = f"not tried after {len(job.fit_errors)} pod(s) of its job found no node: {first}"
                else:
                    why = self.job_notes.get(job.uid, "the job was not reached this cycle")
                    reasons[task.uid] = f"PodGroup {job.uid} is admitted, its pods are waiting: {why}"
        return reasons

    def _queue_statuses(self) -> dict[str, dict[str, Any]]:
        allocated = {name: self.dims.zeros() for name in self.queues}
        pods = dict.fromkeys(self.queues, 0)  # allocated pods, which admission reads (a parent has none)
        phases: dict[str, dict[str, int]] = {name: {} for name in self.queues}
        own: dict[str, list[JobInfo]] = {}
        for job in self.jobs.values():
            counts = phases.setdefault(job.queue, {})
            counts[job.phase] = counts.get(job.phase, 0) + 1
            own.setdefault(job.queue, []).append(job)
        for queue, jobs in own.items():  # summed per queue, then passed up (canonical units: whole numbers)
            vec = np.array([job.allocated for job in jobs]).sum(axis=0)  # row by row: as adding them in turn
            n = sum(job.count(*ALLOCATED_STATUSES) for job in jobs)
            name: str | None = queue
            seen = set()
            while name in self.queues and name not in seen:  # the queue and its ancestors
                seen.add(name)
                allocated[name] += vec
                pods[name] += n
                name = self.queues[name].parent or ("root" if name != "root" else None)
        out = {}
        for name in self.queues:
            vec = allocated[name]
            out[name] = {
                "allocated": {**{n: format_value(n, float(v)) for n, v in zip(self.dims.names, vec) if v > 0},
                              **({"pods": str(pods[name])} if pods[name] else {})},
                **{f"{phase.lower() or 'pending'}": count for phase, count in phases.get(name, {}).items()},
            }
        return out


    def _deserved(self, result: CycleResult) -> None:
        """The queues' shares as the first plugin computing them has them."""
        for plugin in (p for tier in self.tiers for p in tier):
            shares = plugin.deserved_shares() if isinstance(plugin, AccountingPlugin) else None
            if shares is not None:
                result.deserved_by = plugin.name
                result.deserved = {queue: {n: float(v) for n, v in zip(self.dims.names, vec) if v > 0 and math.isfinite(v)}
                                   for queue, vec in shares.items()}
                return


STAMPED = frozenset({"transitionID", "lastTransitionTime"})


def _same_status(phase: str, conditions: list[dict[str, Any]], was_phase: str, was: list[dict[str, Any]]) -> bool:
    """Equal PodGroup statuses but for the fields every session stamps anew (as Volcano compares)."""
    if phase != was_phase or len(conditions) != len(was):
        return False
    for new, old in zip(conditions, was):
        if new is old:
            continue
        for key, value in new.items():  # each side's unstamped keys are in the other, with equal values
            if key not in STAMPED and (key not in old or old[key] != value):
                return False
        for key in old:
            if key not in STAMPED and key not in new:
                return False
    return True
