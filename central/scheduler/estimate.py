"""When will a waiting job start, and what holds it: a forward run of the scheduling cycle.

    explain(cache, conf, now, jobs=None, ...) -> {job uid: Explanation}

On a copy of the cache (the live scheduler's, or the simulator's), the configured cycle runs
over simulated time: running pods end at their expected ends (`central.model.runtime_estimate`:
the pod's or its PodGroup's `caldera.sh/running-estimate`, else the queue's observed median,
else a default), pods the cycle binds run for theirs, evicted pods wait again, as a controller
would recreate them. A job's estimated start is when its first pods bind there (for a PodGroup
whose pods are not made yet, a Volcano Job's before admission: when enqueue admits it). The run is
bounded by a horizon and a number of cycles (pods ending within a minute of each other end
together, one cycle for them all); a job still waiting at its end has no estimate.

Each explanation also holds the job's place in its queue's line (the configured job order,
1 is next), why it waits now (the first cycle's why-pending, with numbers), and what would
unblock it: "can never fit" when a pod asks for more than any node has allocatable, the queue's
capability when that alone is short of the gang's minimum, the evictions the forward run made
for it (preemption or reclaim), else the running pods whose ends it waits for.
"""

from __future__ import annotations

import copy
import functools
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from central.framework.conf import SchedulerConf
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.dra import DeviceClaimWrite
from central.model.objects import ALLOCATED_STATUSES, JobInfo, TaskInfo, TaskStatus
from central.model.runtime_estimate import RuntimeHistory, expected_end, runtime, started_at
from central.model.volumes import ClaimBinding
from central.resources.vectors import EPSILON, format_value
from central.scheduler.cycle import run_cycle

PodMaker = Callable[[str], list[dict[str, Any]]]
HORIZON = 7 * 86400.0  # seconds simulated ahead at most
MAX_CYCLES = 500
STEP = 60.0  # seconds: pods ending within one step of each other end together (fewer cycles)
DEFAULT_RUNTIME = 3600.0  # seconds a pod runs when nothing says (the reservation plugin's default)


@dataclass
class Explanation:
    job: str
    queue: str
    phase: str
    position: int | None = None  # in its queue's line of waiting jobs, 1 = next; None: not waiting
    waiting_in_queue: int = 0
    reason: str = ""  # why it waits now
    unblock: str = ""  # what would let it start
    estimated_start: datetime | None = None
    started: bool = False  # it has pods placed already

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job, "queue": self.queue, "phase": self.phase, "position": self.position,
                "waitingInQueue": self.waiting_in_queue, "reason": self.reason, "unblock": self.unblock,
                "estimatedStart": self.estimated_start.strftime("%Y-%m-%dT%H:%M:%SZ") if self.estimated_start else None,
                "started": self.started}


def waiting(job: JobInfo) -> bool:
    """Not admitted yet, or admitted with pods still to place."""
    return job.pending_phase or bool(job.count(TaskStatus.PENDING))


def explain(cache: ClusterCache, conf: SchedulerConf, now: datetime, jobs: Iterable[str] | None = None,
            history: RuntimeHistory | None = None, horizon: float = HORIZON, max_cycles: int = MAX_CYCLES,
            default_runtime: float = DEFAULT_RUNTIME, copied: bool = False,
            pods_of: PodMaker | None = None) -> dict[str, Explanation]:
    """Explanations for `jobs` (default: every waiting job), from a copy of `cache` at `now`
    (`copied`: `cache` is a copy already, the run may use it up). `pods_of(podgroup uid)` gives
    the pods a controller makes for a PodGroup once it is admitted (a Volcano Job's), so that
    the forward run places them as the cluster would; without it, such a job starts when
    admitted."""
    snapshot = cache if copied else copy.deepcopy(cache)
    conf = conf.offline()
    history = history or RuntimeHistory()
    targets = [uid for uid in (jobs if jobs is not None else
                               [j.uid for j in snapshot.iter_scheduling_jobs() if waiting(j)]) if uid in snapshot.jobs]
    out = {uid: _outline(snapshot.jobs[uid]) for uid in targets}
    _line_up(snapshot, conf, now, out)
    forward = _Forward(snapshot, conf, now, history, default_runtime, pods_of)
    forward.run(set(uid for uid, e in out.items() if not e.started), horizon, max_cycles)
    for uid, e in out.items():
        e.reason = forward.first_reasons.get(uid, "")
        if uid in forward.starts:
            e.estimated_start = forward.starts[uid]
        e.unblock = _unblock(snapshot, snapshot.jobs[uid], forward, uid)  # allocatable and capability: as before the run
    return out


def _outline(job: JobInfo) -> Explanation:
    return Explanation(job=job.uid, queue=job.queue, phase=job.phase or "Pending",
                       started=bool(job.count(*ALLOCATED_STATUSES, TaskStatus.SUCCEEDED)))


def _line_up(cache: ClusterCache, conf: SchedulerConf, now: datetime, out: dict[str, Explanation]) -> None:
    """Each job's place among its queue's waiting jobs, in the configured job order (a session
    opened to read the order, then rolled back: nothing of it stays)."""
    ssn = Session(cache, conf, now)
    try:
        lines: dict[str, list[JobInfo]] = {}
        for job in ssn.jobs.values():
            if waiting(job):
                lines.setdefault(job.queue, []).append(job)
        for line in lines.values():
            line.sort(key=functools.cmp_to_key(lambda a, b: -1 if ssn.job_less(a, b) else 1))  # the order is total
            for i, job in enumerate(line, start=1):
                if job.uid in out:
                    out[job.uid].position, out[job.uid].waiting_in_queue = i, len(line)
    finally:
        ssn.rollback()


class _Forward:
    """The forward run: cycles at the instants pods end, on the snapshot."""

    def __init__(self, cache: ClusterCache, conf: SchedulerConf, now: datetime, history: RuntimeHistory,
                 default_runtime: float, pods_of: PodMaker | None):
        self.cache, self.conf, self.start, self.history = cache, conf, now, history
        self.default_runtime, self.pods_of = default_runtime, pods_of
        self._made: set[str] = set()
        self.ends: list[tuple[float, str]] = []  # (epoch seconds, task uid)
        self.starts: dict[str, datetime] = {}
        self.first_reasons: dict[str, str] = {}
        self.evicted_for: dict[str, int] = {}  # job uid -> pods the run evicted before it started
        self._evicted_since = 0
        epoch = now.timestamp()
        for task in cache.tasks.values():
            if task.status in ALLOCATED_STATUSES:
                job = cache.jobs.get(task.job_uid)
                if job is not None:
                    seconds = runtime(task, job, history, default_runtime)
                    heapq.heappush(self.ends, (expected_end(started_at(task, None, epoch), seconds, epoch), task.uid))

    def run(self, targets: set[str], horizon: float, max_cycles: int) -> None:
        t = self.start.timestamp()
        limit = t + horizon
        for cycle in range(max_cycles):
            moment = datetime.fromtimestamp(t, self.start.tzinfo)
            result = run_cycle(self.cache, self.conf, _Sink(self, t), now=moment)
            if cycle == 0:
                for uid in targets:
                    self.first_reasons[uid] = result.unschedulable.get(uid) or next(
                        (r for pod, r in result.pending_reasons.items()
                         if pod in self.cache.tasks and self.cache.tasks[pod].job_uid == uid), "")
            self._evicted_since += len(result.evictions)
            started = {self.cache.tasks[pod].job_uid for pod in result.binds if pod in self.cache.tasks}
            # a PodGroup without pods yet (a Volcano Job's before admission): its controller makes
            # them once enqueue has admitted it; without a maker, it counts as started then
            admitted = [j for j in self.cache.jobs.values() if not j.tasks and j.has_podgroup and not j.pending_phase
                        and j.uid not in self._made]
            for job in admitted:
                self._made.add(job.uid)
                for pod in self.pods_of(job.uid) if self.pods_of is not None else ():
                    self.cache.apply(pod)
            started |= {j.uid for j in admitted if not j.tasks and j.uid in targets}
            for uid in started & targets:
                if uid not in self.starts:
                    self.starts[uid] = moment
                    self.evicted_for[uid] = self._evicted_since
            if targets <= set(self.starts):
                return
            if result.evictions or result.pipelined or admitted:  # the next cycle (1 s on) places what came
                t = self._finish_due(t + 1.0)
            elif self.ends:
                t = max(t + 1.0, self.ends[0][0])
                self._finish_due(t + STEP)
            else:
                return  # nothing runs, nothing changes: what waits now waits for good
            if t > limit:
                return

    def _finish_due(self, t: float) -> float:
        """Every pod expected to end by `t` ends (the next cycle runs before `t` when it is a
        step ahead: they end a little early together); returns `t`."""
        while self.ends and self.ends[0][0] <= t + EPSILON:
            _, uid = heapq.heappop(self.ends)
            task = self.cache.tasks.get(uid)
            if task is not None and task.status in ALLOCATED_STATUSES:
                self.cache.set_status(task, TaskStatus.SUCCEEDED, task.node)
        return t

    def ran(self, task: TaskInfo, t: float) -> None:
        job = self.cache.jobs.get(task.job_uid)
        seconds = runtime(task, job, self.history, self.default_runtime) if job is not None else self.default_runtime
        heapq.heappush(self.ends, (t + seconds, task.uid))


class _Sink:
    """The forward run's cluster: a bind runs the pod at once, an eviction puts it back in line."""

    def __init__(self, forward: _Forward, t: float):
        self.forward, self.t = forward, t

    def bind(self, pod_key: str, node: str) -> None:
        task = self.forward.cache.tasks.get(pod_key)
        if task is not None:
            self.forward.cache.set_status(task, TaskStatus.RUNNING, node)
            self.forward.ran(task, self.t)

    def evict(self, pod_key: str, reason: str) -> None:
        task = self.forward.cache.tasks.get(pod_key)
        if task is not None:
            self.forward.cache.set_status(task, TaskStatus.PENDING, None)

    def annotate(self, pod_key: str, annotations: dict[str, str]) -> None: ...
    def bind_claims(self, pod_key: str, bindings: tuple[ClaimBinding, ...]) -> None: ...
    def reserve_device_claims(self, pod_key: str, writes: tuple[DeviceClaimWrite, ...]) -> None: ...
    def nominate(self, pod_key: str, node: str) -> None: ...
    def remove_queue_gate(self, pod_key: str) -> None: ...
    def update_podgroup_status(self, podgroup_key: str, status: dict[str, Any]) -> None: ...
    def update_queue_status(self, queue_name: str, status: dict[str, Any]) -> None: ...
    def annotate_queue(self, queue_name: str, annotations: dict[str, str]) -> None: ...
    def publish_node_resources(self, node: str, resources: dict[str, str]) -> None: ...


def _unblock(cache: ClusterCache, job: JobInfo, forward: _Forward, uid: str) -> str:
    names, rows = cache.dims.names, cache.table.alloc[: len(cache.node_list)]
    for task in job.tasks.values():
        req = task.resreq
        if task.status == TaskStatus.PENDING and req is not None and len(rows):
            short = [i for i in range(len(names)) if req[i] > EPSILON and not np.any(rows[:, i] + EPSILON >= req[i])]
            if short:
                i = short[0]
                return (f"can never fit: pod {task.name} asks {names[i]} {format_value(names[i], float(req[i]))}, "
                        f"more than any node has allocatable (at most {format_value(names[i], float(rows[:, i].max()))})")
    total = rows.sum(axis=0) if len(rows) else cache.dims.zeros()
    if job.min_request is not None:  # a PodGroup admission holds back before its pods exist
        over = [i for i in range(len(names)) if job.min_request[i] > total[i] + EPSILON]
        if over:
            i = over[0]
            return (f"can never fit: its minResources {names[i]} {format_value(names[i], float(job.min_request[i]))} "
                    f"exceed the cluster's allocatable {format_value(names[i], float(total[i]))}")
    queue = cache.queues.get(job.queue)
    gang = sorted((t for t in job.tasks.values() if t.resreq is not None), key=lambda t: t.index)[:max(job.min_available, 1)]
    need = job.min_request if job.min_request is not None and job.min_request.any() else sum(
        (t.resreq for t in gang if t.resreq is not None), cache.dims.zeros())
    if queue is not None and queue.capability:
        for name, cap in queue.capability.items():
            if name in names and need[names.index(name)] > cap + EPSILON:
                i = names.index(name)
                return (f"can never fit in queue {job.queue}: its capability {name} {format_value(name, cap)} is below the "
                        f"gang's minimum {name} {format_value(name, float(need[i]))}")
    if uid in forward.starts:
        evicted = forward.evicted_for.get(uid, 0)
        wait = (forward.starts[uid] - forward.start).total_seconds()
        if evicted:
            return f"preemption or reclaim: {evicted} running pod(s) evicted in the forward run before it starts"
        if wait <= 0:
            return "nothing: it fits now"
        return f"running pods ending: it fits once they end, in about {_duration(wait)}"
    return "nothing within the horizon: it is still waiting at the end of the forward run"


def describe(e: Explanation, now: datetime) -> str:
    """The explanation for a person."""
    lines = [f"Job:          {e.job} (queue {e.queue}, phase {e.phase})"]
    if e.started:
        lines.append("Started:      yes, some of its pods are placed")
    if e.position is not None:
        lines.append(f"Position:     {e.position} of {e.waiting_in_queue} waiting in queue {e.queue}")
    if e.reason:
        lines.append(f"Waiting for:  {e.reason}")
    if e.estimated_start is not None:
        wait = (e.estimated_start - now).total_seconds()
        when = "now" if wait <= 0 else f"in {_duration(wait)}"
        lines.append(f"Estimated start: {e.estimated_start.strftime('%Y-%m-%dT%H:%M:%SZ')} ({when})")
    elif not e.started:
        lines.append("Estimated start: none within the forward run's horizon")
    lines.append(f"Unblocked by: {e.unblock}")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{max(minutes, 1)}m"
