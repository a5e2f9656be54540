"""Closing a session: the plugins' last word, every PodGroup's and queue's status, the result.

At close the plugins hand in their last word (gang writes why-pending conditions), every
job's PodGroup phase is computed as Volcano does, open statements are discarded and
committed pipelines turned into nominations, and what is session-only is given back, so the
cache again mirrors the cluster plus the binds and evictions decided.

Only jobs whose close may differ from their last are worked out again (`Handle.closing_jobs`
lists them for the plugins). A job is *settled*, and keeps the status its last close gave it
without a plugin being asked, when all of these hold:
- its tasks are as they were then (`JobInfo.version`: the cache bumps it at every change);
- its phase, minMember and conditions are those that close left, under the same configuration;
- this session recorded nothing of it: no note, condition, side condition, fault or fit error;
- the last close had recorded nothing of it either, nor had that session changed its tasks
  (a placement it discarded), so that the last status came from the job's state alone.
Jobs settle only while every plugin's last word sets conditions from the job's state and what
the session noted of it alone (`Plugin.closes_by_state`): a settled job's conditions are then
its last ones, their session stamps aside, as `_unchanged` would find them, the stamps staying
those the API server holds.

A settled job is moreover *at rest* (`JobInfo.rest`) when no action has anything to do for it:
admitted, valid, and without pending or pipelined pods. The next sessions under the same
configuration pass it by in their actions' and this close's passes until it changes (its
version moves). The cache keeps what they would otherwise gather from every job: the jobs a
session considers (`ClusterCache.scheduling_jobs`), those that may not be at rest
(`ClusterCache.unrested`: changed since a session found them at rest), the per-queue sums, and
each job's last status (`ClusterCache.closed_statuses`), so that neither the open nor this
close visits a job at rest: a cycle's work follows the jobs that changed, plus a copy of two
dicts (a cycle with nothing changed: 1.6 ms beside 10,000 jobs at rest, 3.9 ms beside 50,000,
`caldera bench --case pod`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from central.framework.conf import SchedulerConf
from central.framework.decisions import Decisions
from central.framework.faults import EVENT_REASON, Fault, Faults
from central.framework.journal import Journal
from central.framework.notes import Notes
from central.framework.plugin import AccountingPlugin, Plugin
from central.framework.points import Points
from central.model.cache import ClusterCache
from central.model.dra import DeviceClaimWrite
from central.model.objects import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from central.model.pgstatus import condition_key, semantic
from central.model.queuesums import QueueSum
from central.model.volumes import ClaimBinding
from central.resources.vectors import Dimensions, format_value

if TYPE_CHECKING:
    from central.framework.handle import Handle

# the PodGroup phases whose Unschedulable condition is also told as a Warning Event (Volcano's
# RecordJobStatusEvent; Volcano's pgUnschedulable)
UNSCHEDULABLE_PHASES = frozenset({"Pending", "Inqueue", "Unknown"})
_A, _B, _C, _D = ALLOCATED_STATUSES  # counted inline, for every job at every close


@dataclass
class CycleResult:
    """What one session decided. Keys are "<namespace>/<name>"."""

    binds: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)  # bound pod -> what plugins chose
    claim_bindings: dict[str, tuple[ClaimBinding, ...]] = field(default_factory=dict)  # bound pod -> volume writes
    device_claims: dict[str, tuple[DeviceClaimWrite, ...]] = field(default_factory=dict)  # bound pod -> ResourceClaim writes
    evictions: dict[str, str] = field(default_factory=dict)  # pod -> reason
    pipelined: dict[str, str] = field(default_factory=dict)  # pod -> node, at session end
    nominated: dict[str, str] = field(default_factory=dict)  # preemptors -> node made room on
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)  # every session job's status
    changed_podgroups: set[str] = field(default_factory=set)  # those whose status semantically changed
    unschedulable: dict[str, str] = field(default_factory=dict)  # PodGroup -> why, for those this session could not place
    events: list[tuple[str, str, str, str]] = field(default_factory=list)  # (PodGroup, type, reason, message) plugins told
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    queue_annotations: dict[str, dict[str, str]] = field(default_factory=dict)  # queue -> what plugins recorded
    pending_reasons: dict[str, str] = field(default_factory=dict)  # pod -> why it is not placed
    # the pending pods of jobs a JobValid vote refused (a gang still short of pods): Volcano takes
    # such jobs out of its session, so they get no PodScheduled condition, which autoscalers
    # would read as demand, and no FailedScheduling Event; their PodGroup's condition says why
    invalid_job_pods: set[str] = field(default_factory=set)
    ungated: list[str] = field(default_factory=list)  # pods whose queue-allocation gate is to be removed
    faults: list[Fault] = field(default_factory=list)  # objects whose data the session could not use
    deserved: dict[str, dict[str, float]] = field(default_factory=dict)  # queue -> share a plugin computed
    deserved_by: str = ""  # that plugin (proportion, capacity); "" when none computes shares
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds
    plugin_timings: dict[tuple[str, str], float] = field(default_factory=dict)  # (plugin, OnSessionOpen|Close) -> s


class Closed(NamedTuple):
    """What a session close computed of a job (`JobInfo.closed`), kept for the next close."""

    phase: str  # the phase the close left
    min_available: int
    counts: dict[TaskStatus, int]  # the task counts it saw
    noted: tuple[Any, ...]  # the session's conditions for it, without their stamps (`_noted`)
    status: dict[str, Any]  # the status it computed
    version: int  # the job's version at the close
    quiet: bool  # that session recorded nothing of the job and changed none of its tasks
    conf: SchedulerConf | None  # the configuration of that session
    new: dict[str, Any] | None  # the condition that session set for it
    unschedulable: str | None  # what it reported as the job's reason to be Unschedulable


@dataclass
class Closing:
    """The parts of a session that closing reads."""

    cache: ClusterCache
    dims: Dimensions
    jobs: Mapping[str, JobInfo]
    queues: Mapping[str, QueueInfo]
    tiers: Sequence[Sequence[Plugin]]
    points: Points
    decisions: Decisions
    notes: Notes
    faults: Faults
    journal: Journal
    plugin_timings: dict[tuple[str, str], float]
    handle: Handle | None = None  # its `closing_jobs` is set here for the plugins' last word
    conf: SchedulerConf | None = None  # settled jobs are those a close under the same one left
    opened: int = 0  # `ClusterCache.version_mark` at session open: jobs changed since are newer
    restless: Mapping[str, JobInfo] | None = None  # the jobs not at rest at open (None: all of them)

    def close(self) -> CycleResult:
        decisions, notes = self.decisions, self.notes
        before = set(notes.conditions)  # set while the actions ran: the plugins' last word comes after
        recorded = before.union(notes.side_conditions, notes.jobs, self.faults.jobs)
        settling = all(plugin.closes_by_state for plugin in self.points.on_session_close)  # type: ignore[attr-defined]
        restless, jobs = self.jobs if self.restless is None else self.restless, self.jobs
        # the jobs worked out again: all but the settled ones, in the order restless ones come
        unsettled = dict.fromkeys(self._unsettled(restless, recorded) if settling else jobs)
        if self.handle is not None:
            changing = [jobs[uid] for uid in unsettled]
            self.handle.closing_jobs = lambda: changing
        for plugin in self.points.on_session_close:
            started = time.perf_counter()
            plugin.on_session_close()
            self.plugin_timings[(plugin.name, "OnSessionClose")] = time.perf_counter() - started  # type: ignore[attr-defined]
        # what the session recorded of each job besides the conditions its state gives
        recorded = before.union(notes.side_conditions, notes.jobs, self.faults.jobs)
        for uid in sorted(uid for uid in recorded.union(notes.conditions) if uid in jobs and uid not in unsettled):
            unsettled[uid] = None  # a plugin's last word recorded something of it: worked out again
            last = jobs[uid].closed.new
            if uid not in notes.conditions and last is not None:  # the condition its state gives, restamped
                notes.conditions[uid] = notes.condition(last["type"], last["reason"], last["message"])
        for uid, reason in self.faults.jobs.items():  # after gang's: the fault is the reason that counts
            if self.jobs[uid].count(TaskStatus.PENDING):  # a job with nothing left to place is only reported
                notes.conditions[uid] = notes.condition("Unschedulable", EVENT_REASON, reason)
        self._held_without_pods()
        result = CycleResult(binds=dict(decisions.binds), evictions=dict(decisions.evictions),
                             faults=list(self.faults.by_object.values()))
        result.plugin_timings = dict(self.plugin_timings)
        result.ungated = list(decisions.ungated)
        result.annotations = {uid: marks for uid, marks in notes.annotations.items() if marks and uid in decisions.binds}
        result.claim_bindings = {uid: b for uid, b in notes.claim_bindings.items() if uid in decisions.binds}
        result.device_claims = {uid: w for uid, w in notes.device_claims.items() if uid in decisions.binds}
        woken: list[JobInfo] = []  # at rest at open, its status worked out again
        for uid in unsettled:
            job = jobs[uid]
            if uid not in restless:  # at rest when the session opened, which saved only the others
                self.journal.save_jobs((job,))
                woken.append(job)
            self._close_job(job, recorded, result)
        self._statuses(result)
        for job in restless.values():  # a job at rest has no pending or pipelined pod
            if job.counts.get(TaskStatus.PIPELINED):
                for task in job.tasks.values():
                    if task.status == TaskStatus.PIPELINED:
                        result.pipelined[task.uid] = task.node or ""
            if job.counts.get(TaskStatus.PENDING) or job.fit_errors:
                reasons = self._pending_reasons(job)
                result.pending_reasons.update(reasons)
                if job.uid in notes.invalid:
                    result.invalid_job_pods.update(reasons)
        for statement in reversed(list(decisions.open)):
            statement.discard()
        for task in decisions.pipelines:
            if task.status == TaskStatus.PIPELINED:
                self.journal.on_rollback(_renominate(task, task.nominated_node))
                task.nominated_node = result.nominated[task.uid] = task.node
                self.cache.set_status(task, TaskStatus.PENDING, None)
        sums = self.cache.queue_sums.sums(self.jobs, self.dims) if self.handle is None else \
            self.handle.queue_sums(itertools.chain(restless.values(), woken))  # the others have not changed
        result.queues = queue_statuses(self.dims, self.queues, self.jobs, sums)
        result.queue_annotations = {name: marks for name, marks in notes.queue_annotations.items() if marks}
        result.events = [event for event in notes.events if event[0] in self.jobs]
        self._deserved(result)
        self._stamp_rest(restless, unsettled, recorded, woken)
        self.journal.close()
        return result

    def _unsettled(self, restless: Mapping[str, JobInfo], recorded: set[str]) -> list[str]:
        """The jobs whose last close does not stand: of those not at rest, the ones not
        `_settled`; of those at rest, the ones changed since the session opened (the cache has
        them `unrested` again) or that it recorded something of."""
        conf, jobs, opened = self.conf, self.jobs, self.opened
        out = [uid for uid, job in restless.items() if not _settled(job, conf, recorded)]
        out += [uid for uid in self.cache.unrested if uid in jobs and uid not in restless and jobs[uid].version >= opened]
        out += sorted(uid for uid in recorded if uid in jobs and uid not in restless)
        return out

    def _statuses(self, result: CycleResult) -> None:
        """Every job's status and reason to be Unschedulable, as its last close left them: the
        cache keeps them, so that only the jobs worked out again are visited here."""
        statuses, reasons, jobs = self.cache.closed_statuses, self.cache.closed_unschedulable, self.jobs
        if len(statuses) != len(jobs):  # a settled job back in the sessions (the cache drops those that leave)
            for uid in [uid for uid in jobs if uid not in statuses]:
                closed = jobs[uid].closed
                statuses[uid] = closed.status
                if closed.unschedulable is not None:
                    reasons[uid] = closed.unschedulable
        result.podgroups, result.unschedulable = dict(statuses), dict(reasons)

    def _stamp_rest(self, restless: Mapping[str, JobInfo], unsettled: Mapping[str, None], recorded: set[str],
                    woken: list[JobInfo]) -> None:
        """Mark the jobs now at rest (`JobInfo.rest`), so that the next sessions under this
        configuration pass them by until they change; a job at rest whose status was worked out
        again is so no longer. A rolled back close takes the marks back."""
        conf, was, unrested = self.conf, [], self.cache.unrested
        for job in restless.values():
            valid, counts = job.valid, job.counts
            if (job.uid not in unsettled or _settled(job, conf, recorded)) and valid is not None and valid[0] == job.version \
                    and valid[1] is conf and valid[2] is None and not job.pending_phase \
                    and not counts.get(TaskStatus.PENDING) and not counts.get(TaskStatus.PIPELINED):
                was.append((job, job.rest))
                job.rest = job.version
                unrested.pop(job.uid, None)  # the open had it looked at: the cache has nothing newer of it
        for job in woken:
            was.append((job, job.rest))
            job.rest = -1
            unrested[job.uid] = None  # not at rest, though it has not changed
        cache, conf_was = self.cache, self.cache.rest_conf

        def unstamp() -> None:
            cache.rest_conf = conf_was
            for job, rest in was:
                job.rest = rest
                unrested[job.uid] = None
        self.journal.on_rollback(unstamp)
        cache.rest_conf = conf

    def _close_job(self, job: JobInfo, recorded: set[str], result: CycleResult) -> None:
        """The job's status, worked out (or its last one, where `_unchanged` finds it so), kept
        by the cache for the result, with its reason to be Unschedulable where it has one."""
        notes = self.notes
        new, side = notes.conditions.get(job.uid), notes.side_conditions.get(job.uid)
        noted = _noted(new, side)
        status = _unchanged(job, noted)
        unschedulable = None
        if new is not None and new["type"] == "Unschedulable" and new["reason"] != EVENT_REASON:
            unschedulable = new["message"]
        if status is None:
            status = podgroup_status(job, new, side)
            seen = semantic(status)
            if seen != job.reported and not job.implicit:  # a plain pod's group has no object to write
                result.changed_podgroups.add(job.uid)
            job.phase, job.conditions, job.reported = status["phase"], status["conditions"], seen
        if status["phase"] not in UNSCHEDULABLE_PHASES:
            unschedulable = None
        quiet = job.uid not in recorded and not job.fit_errors and job.version < self.opened
        if status is not (job.closed.status if job.closed is not None else None) or job.closed.quiet != quiet \
                or job.closed.version != job.version or job.closed.conf is not self.conf:
            job.closed = Closed(job.phase, job.min_available, dict(job.counts), noted, status, job.version, quiet,
                                self.conf, new, unschedulable)
        self.cache.closed_statuses[job.uid] = status
        if unschedulable is not None:
            self.cache.closed_unschedulable[job.uid] = unschedulable
        else:
            self.cache.closed_unschedulable.pop(job.uid, None)

    def _held_without_pods(self) -> None:
        """A PodGroup without pods that a gate held back (enqueue) gets the Unschedulable
        condition gang gives a job with pods, so that it is not silently Pending: operators
        create no pod before their PodGroup is admitted, and people look here for why."""
        for uid, note in self.notes.jobs.items():
            job = self.jobs.get(uid)
            if job is not None and not job.tasks and job.pending_phase and uid not in self.notes.conditions:
                message = (f"{job.min_available}/0 tasks in gang unschedulable: pod group is not ready, "
                           f"{job.min_available} minAvailable; {note}")
                self.notes.conditions[job.uid] = self.notes.condition("Unschedulable", "NotEnoughResources", message)

    def _pending_reasons(self, job: JobInfo) -> dict[str, str]:
        if not job.counts.get(TaskStatus.PENDING) and not job.fit_errors:
            return {}
        reasons = {}
        faulted = self.faults.job_reason(job)
        if faulted is not None:
            return {task.uid: f"PodGroup {job.uid} cannot be scheduled: {faulted}"
                    for task in job.tasks.values() if task.status == TaskStatus.PENDING}
        for uid, errors in job.fit_errors.items():
            reasons[uid] = str(errors)
        for task in job.tasks.values():
            if task.status == TaskStatus.PENDING and task.uid not in reasons:
                if self.decisions.placed_then_discarded(task):
                    reasons[task.uid] = "Schedulable: fits a node, but the gang is not ready"
                elif job.pending_phase:
                    why = self.notes.jobs.get(job.uid, "waiting for the enqueue action")
                    reasons[task.uid] = f"PodGroup {job.uid} is not admitted yet: {why}"
                elif task.best_effort and "backfill" not in self.conf.actions:
                    reasons[task.uid] = ("it asks for no resources: only the backfill action places such a pod, "
                                         "and the scheduler's configuration has none")
                elif job.fit_errors:  # not tried: a twin of the same template already found no node
                    first = next(iter(job.fit_errors.values()))
                    reasons[task.uid] = f"not tried after {len(job.fit_errors)} pod(s) of its job found no node: {first}"
                else:
                    why = self.notes.jobs.get(job.uid, "the job was not reached this cycle")
                    reasons[task.uid] = f"PodGroup {job.uid} is admitted, its pods are waiting: {why}"
        return reasons

    def _deserved(self, result: CycleResult) -> None:
        """The queues' shares as the first plugin computing them has them."""
        for plugin in (p for tier in self.tiers for p in tier):
            shares = plugin.deserved_shares() if isinstance(plugin, AccountingPlugin) else None
            if shares is not None:
                result.deserved_by = plugin.name
                result.deserved = {queue: {n: float(v) for n, v in zip(self.dims.names, vec) if v > 0 and math.isfinite(v)}
                                   for queue, vec in shares.items()}
                return


def _renominate(task: TaskInfo, node: str | None) -> Callable[[], None]:
    """Puts the task's nomination back (a rolled back close)."""
    def undo() -> None:
        task.nominated_node = node
    return undo


def _settled(job: JobInfo, conf: SchedulerConf | None, recorded: set[str]) -> bool:
    """Whether the job's last close stands (see the module's doc)."""
    closed = job.closed
    return (closed is not None and closed.quiet and closed.version == job.version and closed.conf is conf
            and conf is not None and job.uid not in recorded and not job.fit_errors and job.phase == closed.phase
            and job.conditions is closed.status["conditions"] and job.min_available == closed.min_available
            and job.reported is not None and not job.counts.get(TaskStatus.RELEASING))


def _noted(new: dict[str, Any] | None, side: Mapping[str, dict[str, Any]] | None) -> tuple[Any, ...]:
    """What the session's conditions for a job say, without their session stamps."""
    return (None if new is None else condition_key(new),
            tuple((kind, condition_key(c)) for kind, c in sorted(side.items())) if side else ())


def _unchanged(job: JobInfo, noted: tuple[Any, ...]) -> dict[str, Any] | None:
    """The status the last close gave the job, when nothing podgroup_status reads has changed
    since: the same phase, its own conditions, the same counts and minMember, and conditions
    from this session that differ from the last ones only in their session stamps. It would
    give a status equal to that one (semantic), already reported; the stamps stay those of
    the status the API server holds. None otherwise."""
    closed = job.closed
    if closed is None or job.counts.get(TaskStatus.RELEASING):
        return None
    status = closed.status
    if (job.conditions is status["conditions"] and job.phase == closed.phase and job.min_available == closed.min_available
            and noted == closed.noted and job.counts == closed.counts and job.reported is not None):
        return status
    return None


def podgroup_status(job: JobInfo, new: dict[str, Any] | None,
                    side: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Volcano's jobStatus: the phase a PodGroup ends the session in, given the condition the
    session set for it (`new`, if any) and plugins' conditions of their own types (`side`)."""
    conditions = list(job.conditions)
    for kind, condition in (side or {}).items():  # replaced where it stands, or added last
        at = next((i for i, c in enumerate(conditions) if c.get("type") == kind), len(conditions))
        conditions[at:at + 1] = [condition]
    if new is not None:  # replaced where it stands, or added last (Volcano's UpdatePodGroupCondition)
        at = next((i for i, c in enumerate(conditions) if c.get("type") == new["type"]), len(conditions))
        conditions[at:at + 1] = [new]
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


def queue_statuses(dims: Dimensions, queues: Mapping[str, QueueInfo], jobs: Mapping[str, JobInfo],
                   sums: Mapping[str, QueueSum] | None = None) -> dict[str, dict[str, Any]]:
    """Every queue's status: what its jobs and its descendants' jobs hold, and its jobs by phase.
    `sums`: the cache's per-queue sums over `jobs` (`central.model.queuesums`), where exact."""
    allocated = {name: dims.zeros() for name in queues}
    pods = dict.fromkeys(queues, 0)  # allocated pods, which admission reads (a parent has none)
    phases: dict[str, dict[str, int]] = {name: {} for name in queues}
    own: dict[str, np.ndarray] = {}  # queue -> what its jobs hold
    held = dict.fromkeys(queues, 0)  # queue -> its jobs' allocated pods
    if sums is not None:
        for queue, kept in sums.items():
            own[queue], held[queue], phases[queue] = kept.allocated, kept.pods, kept.phases
    else:
        members: dict[str, list[np.ndarray]] = {}  # queue -> its jobs' allocated vectors
        for job in jobs.values():
            queue, phase, get = job.queue, job.phase, job.counts.get
            counts = phases.setdefault(queue, {})
            counts[phase] = counts.get(phase, 0) + 1
            members.setdefault(queue, []).append(job.allocated)
            held[queue] = held.get(queue, 0) + get(_A, 0) + get(_B, 0) + get(_C, 0) + get(_D, 0)
        own = {queue: np.array(vectors).sum(axis=0) for queue, vectors in members.items()}  # row by row
    for queue, vec in own.items():  # summed per queue, then passed up (canonical units: whole numbers)
        n = held[queue]
        name: str | None = queue
        seen = set()
        while name in queues and name not in seen:  # the queue and its ancestors
            seen.add(name)
            allocated[name] += vec
            pods[name] += n
            name = queues[name].parent or ("root" if name != "root" else None)
    out = {}
    for name in queues:
        vec = allocated[name]
        status: dict[str, Any] = {
            "allocated": {**{n: format_value(n, float(v)) for n, v in zip(dims.names, vec) if v > 0},
                          **({"pods": str(pods[name])} if pods[name] else {})}}
        for phase, count in phases.get(name, {}).items():  # "" is Pending too: the two add up
            key = phase.lower() or "pending"
            status[key] = status.get(key, 0) + count
        out[name] = status
    return out
