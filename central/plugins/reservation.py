"""reservation: no starvation, by reserving nodes for the job at the head of the line, with
backfill bounded by runtime estimates (Slurm's idea; Volcano's old `reservation`/`elect`
plugins picked one starving job and locked whole idle nodes for it).

Each session, in the configured job order, the waiting jobs (PodGroup Pending or Inqueue,
fewer than minMember pods placed) that have waited longer than `reservation.waitThreshold`
since their PodGroup was made get a reservation, `reservation.maxReservations` at most, the
jobs already holding one first. A reservation is planned over the nodes' future: every
placed pod is expected to end when `central.model.runtime_estimate` says; the plan takes the
earliest such moment (the reservation *matures*) at which the job's missing pods fit, first
fit largest first, and the nodes they fit on. While it holds:
- the reserved job goes first in job order;
- on a reserved node another job's pod may go only if it is expected to end before the
  reservation matures (backfill; off with `reservation.backfill: false`), or if the node keeps
  enough room at maturity for the reserved pods besides it;
- a job may be admitted (enqueue) only on the same terms, counted over the whole cluster:
  else the gates that compare what is admitted with the cluster's size would never admit a
  job as big as the cluster while small jobs keep coming.
A job whose pods are not made yet (a Volcano Job is not given pods before it is admitted)
is planned as minMember equal pods of its minResources.

The reservation is the PodGroup condition `Reserved` (status True, the nodes and the
expected moment in its message) with a Normal `Reserved` Event when it is made. It is rebuilt
from that condition each session, so a restarted scheduler keeps the same nodes where they
still serve. It is released (condition status False, Event `ReservationReleased`) when the
job has its minMember pods placed, or when it could not fit even an empty cluster; a deleted
PodGroup takes its condition with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cmp_to_key
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import ABSTAIN, REJECT, Arguments, Plugin
from central.framework.status import Check, Code
from central.model import runtime_estimate as estimate
from central.model.fields import parse_duration, parse_time
from central.model.objects import ALLOCATED_STATUSES, JobInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

PREFIX = "reservation."
CONDITION = "Reserved"
MADE, RELEASED = "Reserved", "ReservationReleased"
NODES_MARK = "; nodes "
EPSILON = 1e-6
MAX_FIT_TRIES = 256  # moments a plan tries at most before it takes the one when every pod has ended
WAITING_PHASES = frozenset({"", "Pending", "Inqueue"})
OCCUPYING = ALLOCATED_STATUSES | {TaskStatus.PIPELINED, TaskStatus.RELEASING}


@dataclass(frozen=True)
class Settings:
    wait_threshold: float  # seconds
    max_reservations: int
    default_runtime: float  # seconds, when nothing declares a runtime and the queue has no history
    history_size: int
    backfill: bool


@dataclass(frozen=True)
class Placed:
    """A job's pods seen placed, as they stood at the job's `version` (the cache moves it at
    every change of the job's pods)."""

    job: JobInfo
    version: int
    starts: dict[str, tuple[str, float]]  # task uid -> (queue, start in epoch seconds)


@dataclass(frozen=True)
class Memory:
    """Kept between sessions (replaced whole): observed runtimes, and the pods seen placed."""

    history: estimate.RuntimeHistory
    placed: dict[str, Placed]  # job uid -> its pods seen placed
    node_generation: int  # the nodes `placed` was read against
    first_waiting: dict[str, float]  # job uid -> when first seen waiting, for PodGroups without a creation time


@dataclass
class Reservation:
    job: JobInfo
    matures: float  # epoch seconds
    claims: dict[int, np.ndarray]  # node row -> what the job's pods take there
    busy: dict[int, np.ndarray] = field(default_factory=dict)  # row -> held there past maturity by other pods

    def spare(self, row: int, allocatable: np.ndarray) -> np.ndarray:
        return allocatable - self.claims[row] - self.busy.get(row, 0.0)


def _duration(args: Arguments, key: str, default: str) -> float:
    raw = args.get(key, default, object)
    try:
        seconds = parse_duration(str(raw), PREFIX).total_seconds()
    except InputError:
        seconds = -1.0
    if seconds < 0 or isinstance(raw, bool):
        raise args.error(key, f"expected a duration such as 30m, got {raw!r}")
    return seconds


def _positive_int(args: Arguments, key: str, default: int) -> int:
    value = args.get(key, default, int)
    if value <= 0:
        raise args.error(key, f"expected a positive whole number, got {value}")
    return int(value)


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def reserved_nodes(job: JobInfo) -> list[str] | None:
    """The nodes the PodGroup's Reserved condition names; None when it holds no reservation."""
    for condition in job.conditions:
        if condition.get("type") == CONDITION and condition.get("status") == "True":
            message = str(condition.get("message") or "")
            at = message.rfind(NODES_MARK)
            return [n for n in message[at + len(NODES_MARK):].split(",") if n] if at >= 0 else []
    return None


class ReservationPlugin(Plugin, ext.JobOrder, ext.JobEnqueueable, ext.JobEnqueued, ext.Predicate,
                        ext.AllocationEvents, ext.SessionClose):
    name = "reservation"
    closes_by_state = True  # its last word sets side conditions only, which closing sees
    time_sensitive = True  # a job crosses the wait threshold with the clock alone

    @classmethod
    def read_arguments(cls, args: Arguments) -> Settings:
        return Settings(
            wait_threshold=_duration(args, PREFIX + "waitThreshold", "30m"),
            max_reservations=_positive_int(args, PREFIX + "maxReservations", 1),
            default_runtime=_duration(args, PREFIX + "defaultRuntime", "1h") or 1.0,
            history_size=_positive_int(args, PREFIX + "historySize", 100),
            backfill=args.get(PREFIX + "backfill", True, bool),
        )

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.settings: Settings
        self.now = handle.now.timestamp()
        table = handle.table
        self.allocatable = table.idle + table.used  # per row
        memory = handle.recall(self.name, "memory")
        self.history, self.placed = self._observe(memory)
        seen = memory.first_waiting if memory is not None else {}
        self.first_waiting = {uid: seen.get(uid, self.now) for uid, job in handle.jobs.items() if self._waiting(job)}
        handle.remember(self.name, "memory", Memory(self.history, self.placed, handle.node_generation, self.first_waiting))
        self.reservations: list[Reservation] | None = None  # decided at the first question
        self.by_job: dict[str, Reservation] = {}
        self.by_row: dict[int, list[Reservation]] = {}
        self.counted: dict[str, list[tuple[Reservation, int]]] = {}  # task uid -> busy entries it added
        self.admitted_late = np.zeros(len(handle.dims.names))  # admitted this session, ending past maturity
        self.deciding = False
        self.room: np.ndarray | None = None
        self.timeline: list[tuple[float, int, np.ndarray]] = []  # the cluster's room at the first maturity, once asked

    # --- runtimes ------------------------------------------------------------------------------

    def _observe(self, memory: Memory | None) -> tuple[estimate.RuntimeHistory, dict[str, Placed]]:
        """The runtimes of the pods that ended since the last session join the history. Only
        the jobs that changed since are read again (while the nodes hold: a Node that comes
        takes its pods without a change to their jobs)."""
        history = memory.history.copy() if memory is not None else estimate.RuntimeHistory(self.settings.history_size)
        before = memory.placed if memory is not None else {}
        same_nodes = memory is not None and memory.node_generation == self.handle.node_generation
        tasks, jobs = self.handle.tasks, self.handle.jobs
        placed: dict[str, Placed] = {}
        for uid, seen in before.items():
            job = jobs.get(uid)
            if same_nodes and job is seen.job and job.version == seen.version:
                placed[uid] = seen
                continue
            for task_uid, (queue, start) in seen.starts.items():
                task = tasks.get(task_uid)
                if task is None or task.status == TaskStatus.SUCCEEDED:
                    history.observe(queue, self.now - start)
        nodes = self.handle.nodes_by_name
        for uid, job in jobs.items():
            if uid in placed:
                continue
            seen = before.get(uid)
            starts: dict[str, tuple[str, float]] = {}
            for task in job.tasks.values():
                node = nodes.get(task.node) if task.node and task.status in OCCUPYING else None
                if node is not None and task.uid in node.tasks:
                    first = seen.starts.get(task.uid) if seen is not None else None
                    starts[task.uid] = (job.queue, estimate.started_at(task, first[1] if first else None, self.now))
            placed[uid] = Placed(job, job.version, starts)
        return history, placed

    def _runtime(self, task: TaskInfo | None, job: JobInfo) -> float:
        return estimate.runtime(task, job, self.history, self.settings.default_runtime)

    def _end(self, task: TaskInfo, job: JobInfo | None) -> float:
        if job is None or task.status == TaskStatus.RELEASING:
            return self.now + estimate.OVERRUN_GRACE
        seen = self.placed.get(job.uid)
        start = seen.starts[task.uid][1] if seen is not None and task.uid in seen.starts else self.now
        return estimate.expected_end(start, self._runtime(task, job), self.now)

    # --- deciding the reservations -------------------------------------------------------------

    def _decide(self) -> None:
        if self.reservations is not None or self.deciding:
            return
        self.deciding = True
        try:
            self.reservations = self._plan_all()
        finally:
            self.deciding = False
        for res in self.reservations:
            self.by_job[res.job.uid] = res
            for row in res.claims:
                self.by_row.setdefault(row, []).append(res)

    def _waiting(self, job: JobInfo) -> bool:
        return (job.phase in WAITING_PHASES and job.ready < job.min_available and not job.implicit
                and job.has_podgroup and not self.handle.is_faulted(job))

    def _waited(self, job: JobInfo) -> float:
        """Since the PodGroup was made (else since this scheduler first saw it waiting)."""
        try:
            return self.now - parse_time(job.creation, "creationTimestamp").timestamp()
        except InputError:
            return self.now - self.first_waiting.get(job.uid, self.now)

    def _plan_all(self) -> list[Reservation]:
        handle, settings = self.handle, self.settings
        held: dict[str, list[str]] = {}
        for job in handle.jobs.values():
            nodes = reserved_nodes(job)
            if nodes is None:
                continue
            if job.ready >= job.min_available or job.phase not in WAITING_PHASES:
                handle.set_side_condition(job, CONDITION, False, "Started", "the job has its pods placed")
                handle.job_event(job, "Normal", RELEASED, "reservation released: the job started")
                continue
            if self._waiting(job):  # (a job faulted this session keeps its condition, unenforced)
                held[job.uid] = nodes
        starving = [j for j in handle.jobs.values()
                    if j.uid not in held and self._waiting(j) and self._waited(j) >= settings.wait_threshold]
        candidates = [handle.jobs[uid] for uid in held]
        candidates += starving
        ranked = _sorted(candidates, handle.job_less, held)
        timeline = self.timeline = self._timeline() if ranked else []  # read only where a job is planned
        out: list[Reservation] = []
        free_claims = np.zeros_like(self.allocatable)
        for job in ranked:
            if len(out) >= settings.max_reservations:
                if job.uid in held:  # a newer head of the line took its place
                    self._release(job, "Superseded", "a job ahead of it in job order holds the reservation")
                continue
            shapes = self._shapes(job)
            if not shapes:
                continue
            if not self._fits_empty(shapes):
                if job.uid in held:
                    self._release(job, "NeverFits", "the job's pods do not fit the cluster even empty")
                continue
            plan = self._plan(shapes, timeline, free_claims, [handle.nodes_by_name[n].index for n in held.get(job.uid, [])
                                                               if n in handle.nodes_by_name])
            if plan is None:  # other reservations hold what it needs: wait for them
                continue
            matures, claims = plan
            res = Reservation(job, matures, claims)
            for row, claim in claims.items():
                free_claims[row] += claim
            out.append(res)
            self._announce(res, job.uid in held)
        self._count_busy(out)
        return out

    def _release(self, job: JobInfo, reason: str, why: str) -> None:
        self.handle.set_side_condition(job, CONDITION, False, reason, why)
        self.handle.job_event(job, "Normal", RELEASED, f"reservation released: {why}")

    def _announce(self, res: Reservation, was_held: bool) -> None:
        names = sorted(self.handle.nodes[row].name for row in res.claims)
        matures = math.ceil(res.matures / 60.0) * 60.0  # to the minute: a status rewritten only when it moves
        message = f"nodes reserved until the job fits, expected at {_stamp(matures)}{NODES_MARK}{','.join(names)}"
        self.handle.set_side_condition(res.job, CONDITION, True, "Reserved", message)
        if not was_held:
            self.handle.job_event(res.job, "Normal", MADE, message)

    def _shapes(self, job: JobInfo) -> list[np.ndarray]:
        """The requests of the pods the job still needs placed, largest first."""
        needed = job.min_available - job.ready
        if needed <= 0:
            return []
        pending = [t.resreq for t in job.tasks.values() if t.status == TaskStatus.PENDING and t.resreq is not None]
        if pending:
            pending.sort(key=lambda v: -float(v.sum()))
            return pending[:needed]
        if job.tasks or job.min_request is None or not job.min_request.any():
            return []
        each = job.min_request / job.min_available  # pods not made yet: minMember equal ones
        return [each] * needed

    def _fits_empty(self, shapes: list[np.ndarray]) -> bool:
        free = self.allocatable.copy()
        return _first_fit(shapes, free, list(range(len(free)))) is not None

    def _timeline(self) -> list[tuple[float, int, np.ndarray]]:
        """(expected end, node row, request) of every pod on a node, soonest first."""
        jobs, out = self.handle.jobs, []
        for node in self.handle.nodes:
            for task in node.tasks.values():
                if task.status in OCCUPYING and task.resreq is not None:
                    out.append((self._end(task, jobs.get(task.job_uid)), node.index, task.resreq))
        out.sort(key=lambda e: e[0])
        return out

    def _plan(self, shapes: list[np.ndarray], timeline: list[tuple[float, int, np.ndarray]], claimed: np.ndarray,
              preferred: list[int]) -> tuple[float, dict[int, np.ndarray]] | None:
        """The earliest moment the pods fit, and where; None when they fit only once other
        reservations are gone."""
        usable = [n.index for n in self.handle.nodes if not n.unschedulable]
        free = self.handle.table.idle - claimed
        need = np.sum(shapes, axis=0)
        moments = sorted({end for end, _, _ in timeline})
        at, tries = 0, 0
        for moment in [self.now, *moments]:
            while at < len(timeline) and timeline[at][0] <= moment:
                free[timeline[at][1]] += timeline[at][2]
                at += 1
            last = at == len(timeline)
            if not last and (tries >= MAX_FIT_TRIES or np.any(free[usable].clip(min=0).sum(axis=0) < need - EPSILON)):
                continue
            tries += 1
            order = preferred + sorted((r for r in usable if r not in preferred), key=lambda r: -float(free[r].sum()))
            claims = _first_fit(shapes, free.copy(), order)
            if claims is not None:
                return moment, claims
            if last:
                return None
        return None

    def _count_busy(self, reservations: list[Reservation]) -> None:
        """What stays on each reserved node past maturity (pods expected to outlive it)."""
        if not reservations:
            return
        jobs = self.handle.jobs
        for res in reservations:
            for row in res.claims:
                busy = np.zeros_like(self.allocatable[row])
                for task in self.handle.nodes[row].tasks.values():
                    if task.status in OCCUPYING and task.resreq is not None and task.job_uid != res.job.uid \
                            and self._end(task, jobs.get(task.job_uid)) > res.matures:
                        busy += task.resreq
                res.busy[row] = busy

    # --- the points ----------------------------------------------------------------------------

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        if self.deciding:
            return 0
        self._decide()
        lres, rres = self.by_job.get(left.uid), self.by_job.get(right.uid)
        if lres is None and rres is None:
            return 0
        if lres is None or rres is None:
            return -1 if lres is not None else 1
        assert self.reservations is not None
        return -1 if self.reservations.index(lres) < self.reservations.index(rres) else 1

    def _backfills(self, task: TaskInfo | None, job: JobInfo, res: Reservation) -> bool:
        return self.settings.backfill and self.now + self._runtime(task, job) <= res.matures + EPSILON

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        self._decide()
        if not self.by_row:
            return []
        job = self.handle.jobs[task.job_uid]
        ok = np.ones(len(rows), dtype=bool)
        reason = ""
        for i, row in enumerate(rows.tolist()):
            for res in self.by_row.get(row, ()):
                if res.job.uid == job.uid or self._backfills(task, job, res):
                    continue
                if task.resreq is not None and np.all(task.resreq <= res.spare(row, self.allocatable[row]) + EPSILON):
                    continue
                ok[i] = False
                reason = (f"node reserved for PodGroup {res.job.uid} until {_stamp(res.matures)}, "
                          "and this pod is not expected to end before (reservation)")
        return [] if ok.all() else [Check(ok, reason, Code.UNSCHEDULABLE)]

    def job_enqueueable(self, job: JobInfo) -> int:
        self._decide()
        if not self.reservations or job.uid in self.by_job:
            return ABSTAIN
        first = min(self.reservations, key=lambda r: r.matures)
        if self._backfills(None, job, first):
            return ABSTAIN
        need = job.min_request if job.min_request is not None else np.zeros_like(self.admitted_late)
        if self.room is None:
            self.room = self._room_at(first.matures)
        room = self.room - self.admitted_late
        if np.all(need <= room + EPSILON):
            return ABSTAIN
        self.handle.note_job(job, f"the cluster is reserved for PodGroup {first.job.uid} from {_stamp(first.matures)}, "
                                  "and this job is not expected to end before (reservation)")
        return REJECT

    def _room_at(self, moment: float) -> np.ndarray:
        """The cluster's room at `moment` besides the reservations, the pods expected to
        outlive it, and the admitted jobs not placed yet."""
        assert self.reservations is not None
        room = self.allocatable.sum(axis=0)
        for res in self.reservations:
            room = room - sum(res.claims.values())
        for end, _, request in self.timeline:
            if end > moment:
                room = room - request
        for job in self.handle.jobs.values():
            if job.phase == "Inqueue" and job.uid not in self.by_job and not job.ready and job.min_request is not None \
                    and self.now + self._runtime(None, job) > moment:
                room = room - job.min_request
        return room

    def job_enqueued(self, job: JobInfo) -> None:
        if self.reservations and job.uid not in self.by_job and job.min_request is not None:
            first = min(self.reservations, key=lambda r: r.matures)
            if not self._backfills(None, job, first):
                self.admitted_late = self.admitted_late + job.min_request

    # --- what placements do to the room left at maturity ----------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        if not self.by_row or task.node is None or task.resreq is None:
            return
        node = self.handle.nodes_by_name.get(task.node)
        job = self.handle.jobs.get(task.job_uid)
        if node is None or job is None:
            return
        added = []
        for res in self.by_row.get(node.index, ()):
            if res.job.uid != job.uid and self.now + self._runtime(task, job) > res.matures:
                res.busy[node.index] = res.busy.get(node.index, 0.0) + task.resreq
                added.append((res, node.index))
        if added:
            self.counted[task.uid] = added

    def on_deallocate(self, task: TaskInfo) -> None:
        for res, row in self.counted.pop(task.uid, ()):
            if task.resreq is not None:
                res.busy[row] = res.busy[row] - task.resreq

    def on_session_close(self) -> None:
        self._decide()  # a session that asked nothing still keeps its reservations' conditions


def _sorted(jobs: list[JobInfo], less: Callable[[JobInfo, JobInfo], bool], held: dict[str, list[str]]) -> list[JobInfo]:
    """Jobs in the session's job order (held reservations first among equals)."""
    def compare(left: JobInfo, right: JobInfo) -> int:
        if less(left, right):
            return -1
        if less(right, left):
            return 1
        return (left.uid not in held) - (right.uid not in held)
    return sorted(jobs, key=cmp_to_key(compare))


def _first_fit(shapes: list[np.ndarray], free: np.ndarray, order: list[int]) -> dict[int, np.ndarray] | None:
    """Where the pods go, first fit over `order` (edits `free`); None when one does not fit."""
    claims: dict[int, np.ndarray] = {}
    for shape in shapes:
        for row in order:
            if np.all(shape <= free[row] + EPSILON):
                free[row] -= shape
                claims[row] = claims.get(row, 0.0) + shape
                break
        else:
            return None
    return claims
