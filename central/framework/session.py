"""A scheduling session: one cycle's view of the cluster, its plugins, and dispatch to them.

Opening a session costs little: it works on the cache's own objects and node table, and its
`Journal` (`central.framework.journal`) records what it changes, so a failed session rolls
back. The parts are separate and each is handed only to what uses it: `Decisions` (what
statements decided), `Notes` (why-pending text, conditions, annotations), `Faults`, the
`Placement` and the plugins' `Handle`. This module opens the session and dispatches the
extension points (orderings, votes, gates) by their combination rules; closing it is
`central.framework.closing`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone

from central.errors import InputError
from central.framework import points as rules
from central.framework.closing import Closing, CycleResult
from central.framework.conf import SchedulerConf
from central.framework.decisions import Decisions
from central.framework.faults import AGENT_REPORT, Faults, JobBoundary
from central.framework.handle import Handle
from central.framework.journal import Journal
from central.framework.notes import Notes
from central.framework.ordering import PriorityQueue
from central.framework.placement import Placement
from central.framework.plugin import Plugin, PluginOption
from central.framework.points import Points
from central.framework.statement import Statement
from central.framework.status import Status
from central.model.cache import ClusterCache
from central.model.nodetable import column_sums
from central.model.objects import JobInfo, QueueInfo, TaskInfo
from central.model.schedulinggate import SCHEDULING_GATES_QUEUE_ADMISSION
from central.model.subgroups import SubGroup
from central.model.topology import HyperNode

__all__ = ["CycleResult", "Session"]  # CycleResult: where callers have long found it

_session_ids = itertools.count(1)


class Session:
    def __init__(self, cache: ClusterCache, conf: SchedulerConf, now: datetime | None = None):
        self.uid = f"session-{next(_session_ids)}"
        self.cache = cache
        self.conf = conf
        self.now = now or datetime.now(timezone.utc)  # the cycle's clock; injected by tests and simulate
        self.dims = cache.dims
        self.nodes = cache.node_list
        self.total = column_sums(cache.table.alloc[: len(self.nodes)])
        missing = [name for name in ("root", cache.default_queue) if name not in cache.queues]
        self.queues: dict[str, QueueInfo] = cache.all_queues()
        self.jobs: dict[str, JobInfo] = cache.scheduling_jobs()
        # The jobs not at rest (`JobInfo.rest`): the only ones the actions' and the close's
        # passes have anything to do for. A job at rest stays so until it changes.
        self.restless = cache.restless_jobs(self.jobs) if conf is cache.rest_conf else dict(self.jobs)
        self.opened = cache.version_mark()  # jobs whose version is newer changed in this session
        self.journal = Journal(cache)

        def forget_made_up_queues() -> None:  # all_queues() made them up for this session
            for name in missing:
                cache.queues.pop(name, None)
        self.journal.on_rollback(forget_made_up_queues)
        self.journal.on_rollback(cache.queue_sums.forget)
        self.journal.save_jobs(self.restless.values())  # the close saves a job at rest before it changes one
        for job in self.restless.values():
            job.fit_errors = {}
        self.decisions = Decisions()
        self.notes = Notes(self.uid, self.now)
        self.placement = Placement(cache.table, self.nodes, cache.nodes, self.dims.names)
        if cache.shard is not None:
            self.placement.restrict(self.nodes, cache.shard)
        kept, cache.kept_views = cache.kept_views, None  # the close keeps them again where they still hold
        self.placement.resume(kept, conf, cache.node_generation)
        self.faults = Faults(self.jobs, self.placement.exclude)
        for name, reason in cache.node_data_faults.items():  # refused agent reports: see central.agents.feed
            if name in cache.nodes:
                self.faults.fault_node(cache.nodes[name], InputError("", reason), AGENT_REPORT)
        self.plugin_timings: dict[tuple[str, str], float] = {}
        self.handle = Handle(cache, self.now, self.jobs, self.queues, self.total, self.notes, self.faults,
                             self.journal, self.decisions,  # what the plugins see of this session
                             SCHEDULING_GATES_QUEUE_ADMISSION in conf.features)
        try:
            self.tiers: list[list[Plugin]] = [[self._open_plugin(conf.registry.plugins[opt.name], opt) for opt in tier]
                                              for tier in conf.tiers]
        except BaseException:
            self.rollback()
            raise
        self.handle.opening = False
        self.points = Points(self.tiers)
        self._job_order, self._queue_order = self.points.job_order, self.points.queue_order  # one lookup less per comparison
        self.handle.job_less = self.job_less
        self.placement.use(self.points)

    def _open_plugin(self, cls: type[Plugin], option: PluginOption) -> Plugin:
        started = time.perf_counter()
        plugin = cls(option, self.handle)
        self.plugin_timings[(plugin.name, "OnSessionOpen")] = time.perf_counter() - started
        return plugin

    # --- orderings (fallback: creation time, then uid; tasks: pod index first) ----------------

    # (first_opinion inlined: these run for every heap comparison)
    def job_less(self, left: JobInfo, right: JobInfo) -> bool:
        for fn in self._job_order:
            result = fn(left, right)
            if result:
                return result < 0
        return (left.creation, left.uid) < (right.creation, right.uid)

    def queue_less(self, left: QueueInfo, right: QueueInfo) -> bool:
        for fn in self._queue_order:
            result = fn(left, right)
            if result:
                return result < 0
        return (left.creation, left.name) < (right.creation, right.name)

    def task_less(self, left: TaskInfo, right: TaskInfo) -> bool:
        for fn in self.points.task_order:
            result = fn(left, right)
            if result:
                return result < 0
        return (left.index, left.creation, left.uid) < (right.index, right.creation, right.uid)

    def victim_queue_less(self, left: QueueInfo, right: QueueInfo, preemptor_queue: QueueInfo) -> bool:
        result = rules.first_opinion(self.points.victim_queue_order, left, right, preemptor_queue)
        if result:
            return result < 0
        return self.queue_less(right, left)

    def victim_less(self, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], bool]:
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

    # --- votes and gates ----------------------------------------------------------------------

    def job_valid(self, job: JobInfo) -> str | None:
        faulted = self.faults.job_reason(job)
        if faulted is not None:
            return faulted
        kept = job.valid  # the answer holds while the job's version and the configuration do
        if not self.points.job_valid_by_state:
            answer = rules.first_answer(self.points.job_valid, job)
        elif kept is not None and kept[0] == job.version and kept[1] is self.conf:
            answer = kept[2]
        else:
            answer = rules.first_answer(self.points.job_valid, job)
            job.valid = (job.version, self.conf, answer)
        if answer is not None:
            self.notes.invalid.add(job.uid)
        return answer

    def job_ready(self, job: JobInfo) -> bool:
        return rules.all_true(self.points.job_ready, job)

    def job_pipelined(self, job: JobInfo) -> bool:
        return rules.vote(self.points.job_pipelined, job)

    def job_starving(self, job: JobInfo) -> bool:
        return rules.first_tier_all(self.points.job_starving, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return rules.vote(self.points.job_enqueueable, job)

    def job_enqueued(self, job: JobInfo) -> None:
        rules.notify(self.points.job_enqueued, job)

    def overused(self, queue: QueueInfo) -> bool:
        return rules.any_true(self.points.overused, queue)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status:
        return rules.first_refusal(self.points.allocatable, queue, task)

    def admits_in_row(self, queue: QueueInfo, task: TaskInfo, count: int) -> int:
        """Of `count` pods of the task's template in a row, the first admitted already, how many
        Allocatable admits, each charged before the next is asked (1 where a plugin cannot say)."""
        admitted = count
        for fn in self.points.admits_in_row:
            answer = fn(queue, task, admitted)
            if answer is None:
                return 1
            admitted = min(admitted, answer)
        return max(admitted, 1)

    def allocations_to_ready(self, job: JobInfo) -> int:
        """The fewest more allocated pods before JobReady could answer True (all must)."""
        return max((fn(job) for fn in self.points.allocations_to_ready), default=1)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        return rules.first_refusal(self.points.preemptive, queue, task)

    def victim_tasks(self, running: list[TaskInfo]) -> list[tuple[TaskInfo, str]]:
        return rules.union_first_tier(self.points.victim_tasks, running)

    def hypernode_gradients(self, job: JobInfo, group: SubGroup | None = None,
                            within: HyperNode | None = None) -> list[list[HyperNode]] | None:
        return rules.first_answer(self.points.hypernode_gradients, job, group, within)

    def eviction_gradients(self, job: JobInfo) -> list[list[HyperNode]] | None:
        return rules.first_answer(self.points.eviction_gradients, job)

    @property
    def actions(self) -> tuple[str, ...]:
        """The configured actions, in order."""
        return self.conf.actions

    @property
    def queue_gate_admission(self) -> bool:
        return SCHEDULING_GATES_QUEUE_ADMISSION in self.conf.features

    # --- what actions work with -------------------------------------------------------------

    def statement(self) -> Statement:
        return Statement(self.cache, self.points, self.decisions)

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

    def job_boundary(self, job: JobInfo, source: str, stmt: Statement | None = None) -> JobBoundary:
        """A `with` block in which bad data of `job` faults the job (discarding `stmt`); see
        `central.framework.faults`."""
        return self.faults.boundary(job, source, stmt)

    # --- end --------------------------------------------------------------------------------

    def close(self) -> CycleResult:
        result = Closing(self.cache, self.dims, self.jobs, self.queues, self.tiers, self.points,
                         self.decisions, self.notes, self.faults, self.journal, self.plugin_timings,
                         self.handle, self.conf, self.opened, self.restless).close()
        self.cache.kept_views = self.placement.keep(self.conf, self.cache.node_generation)
        return result

    def rollback(self) -> None:
        """Put the cache back exactly as this session found it (see `central.framework.journal`)."""
        self.journal.rollback()
