"""proportion: weighted fair share of the cluster between queues.

Each queue's `deserved` share is water-filled: every round splits what remains by weight
among the queues not yet satisfied, capping each at its real capability and its request and
raising it to its guarantee, until nothing remains or nothing moves. A queue may allocate up
to its deserved share (on the dimensions a task asks for), is overused once its allocation
reaches it, and admits a job (enqueue) only while allocation + inqueue + the job's
minResources - elastic stays within its real capability.

A `deviceclass/<DeviceClass>` key in a queue's capability caps the devices of that class its
pods' ResourceClaims hold, a shared claim once (central/model/draquota.py), on Allocatable and
JobEnqueueable, as the capacity plugin does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import PERMIT, REJECT, AccountingPlugin, charge_repeated
from central.framework.status import ALLOWED, Status, refused
from central.model.draquota import DeviceQuota, min_claim_tasks
from central.model.objects import JobInfo, QueueInfo, TaskInfo, TaskStatus
from central.model.queuesums import less_gated
from central.resources.vectors import EPSILON, dominant_share, format_value, less_equal, less_equal_on, repeats_exactly

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption


@dataclass
class QueueAttr:
    weight: int
    guarantee: np.ndarray
    capability: np.ndarray  # inf where unset
    real_capability: np.ndarray
    allocated: np.ndarray
    request: np.ndarray
    inqueue: np.ndarray
    elastic: np.ndarray
    deserved: np.ndarray
    share: float | None = None  # computed when an ordering asks, dropped on change


def over_share(names: list[str], allocated: np.ndarray, request: np.ndarray, limit: np.ndarray, what: str) -> str:
    """"cpu: 21500m allocated + 4 requested > 24 deserved" for each resource that does not fit."""
    return "; ".join(f"{name}: {format_value(name, allocated[i])} allocated + {format_value(name, request[i])} "
                     f"requested > {format_value(name, limit[i])} {what}"
                     for i, name in enumerate(names)
                     if request[i] > EPSILON and allocated[i] + request[i] > limit[i] + EPSILON)


def never_fits(names: list[str], min_res: np.ndarray, capability: np.ndarray | None, total: np.ndarray,
               cluster: str = "the cluster has") -> str | None:
    """Why a job can never be admitted, whatever else runs: its minResources exceed the queue's
    capability (`capability`, None where the gate has none) or all the cluster has; None when
    it could be admitted once room is made ("not now")."""
    parts = []
    for i, name in enumerate(names):
        need = min_res[i]
        if need <= EPSILON:
            continue
        if capability is not None and need > capability[i] + EPSILON:
            parts.append(f"{name}: the job needs {format_value(name, need)}, more than the queue's capability "
                         f"{format_value(name, capability[i])}")
        elif need > total[i] + EPSILON:
            parts.append(f"{name}: the job needs {format_value(name, need)}, more than {cluster} "
                         f"({format_value(name, total[i])})")
    return f"it can never be admitted ({'; '.join(parts)})" if parts else None


def job_min_resources(ssn: Handle, job: JobInfo) -> np.ndarray:
    """minResources over the session's dimensions (read-only: the cache's vector is shared)."""
    return job.min_request if job.min_request is not None else ssn.dims.vector(job.min_resources or {})


def admitted_hold(jobs: list[JobInfo], held: np.ndarray) -> np.ndarray:
    """The sum of what each job holds of its queue's admitted resources (`held`, a row per
    job, changed in place): each row less its job's gated pods (`less_gated`), summed at once."""
    for i in np.flatnonzero(held.any(axis=1)).tolist():
        if jobs[i].counts.get(TaskStatus.PENDING):
            held[i] = less_gated(jobs[i], held[i])
    return held.sum(axis=0)


def queue_usage(ssn: Handle, queue_names: set[str]) -> dict[str, QueueAttr]:
    """Allocated, requested, inqueue and elastic resources of the queues that have jobs."""
    dims, total = ssn.dims, ssn.total
    total_guarantee = dims.zeros()
    for queue in ssn.queues.values():
        total_guarantee += dims.vector(queue.guarantee)
    attrs: dict[str, QueueAttr] = {}
    for name in sorted(queue_names):
        queue = ssn.queues[name]
        guarantee = dims.vector(queue.guarantee)
        capability = dims.vector(queue.capability, missing=np.inf)
        real = np.minimum(np.maximum(total - total_guarantee, 0) + guarantee, capability)
        attrs[name] = QueueAttr(queue.weight, guarantee, capability, real, dims.zeros(), dims.zeros(),
                                dims.zeros(), dims.zeros(), dims.zeros())
    kept = ssn.queue_sums()
    if kept is not None:  # the cache's sums, updated for the jobs that changed (central.model.queuesums)
        for name, attr in attrs.items():
            sums = kept.get(name)
            if sums is None:  # no job in it: nothing allocated, requested or held
                continue
            attr.allocated = sums.allocated.copy()
            attr.request = attr.allocated + sums.pending
            attr.inqueue = sums.held.copy()
            attr.elastic = sums.elastic.copy()
        return attrs
    by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.queue in attrs:
            by_queue.setdefault(job.queue, []).append(job)
    for name, jobs in by_queue.items():  # one array per queue, not a vector sum per job
        attr = attrs[name]
        allocated = np.array([job.allocated for job in jobs])
        min_res = np.array([job_min_resources(ssn, job) for job in jobs])
        inqueue = np.array([job.phase == "Inqueue" for job in jobs])
        running = np.array([job.phase == "Running" and job.min_resources is not None
                            and job.ready_num >= job.min_available for job in jobs])
        attr.allocated = allocated.sum(axis=0)
        attr.request = attr.allocated + np.array([job.pending_request for job in jobs]).sum(axis=0)
        held = np.maximum(min_res - allocated, 0)
        held[inqueue] = min_res[inqueue]
        held[~(inqueue | running)] = 0
        attr.inqueue = admitted_hold(jobs, held)
        attr.elastic = np.maximum(allocated - min_res, 0).sum(axis=0)
    return attrs


def water_fill(attrs: dict[str, QueueAttr], total: np.ndarray) -> None:
    remaining = total.copy()
    met: set[str] = set()
    while True:
        weight = sum(a.weight for n, a in attrs.items() if n not in met)
        if weight == 0:
            return
        before = remaining.copy()
        increased, decreased = np.zeros_like(total), np.zeros_like(total)
        for name, attr in attrs.items():
            if name in met:
                continue
            old = attr.deserved.copy()
            deserved = attr.deserved + remaining * (attr.weight / weight)
            deserved = np.minimum(deserved, attr.real_capability)
            deserved = np.minimum(deserved, attr.request)
            attr.deserved = np.maximum(deserved, attr.guarantee)
            if less_equal(attr.request, attr.deserved) or np.all(np.abs(attr.deserved - old) < EPSILON):
                met.add(name)
            diff = attr.deserved - old
            increased += np.maximum(diff, 0)
            decreased += np.maximum(-diff, 0)
        remaining = remaining - increased + decreased
        if np.all(remaining < EPSILON) or np.array_equal(remaining, before):
            return


class Proportion(AccountingPlugin, ext.QueueOrder, ext.JobEnqueueable, ext.Overused,
                 ext.Allocatable, ext.Preemptive, ext.Reclaimable):
    name = "proportion"
    divides_queues = "flat"

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        kept = handle.queue_sums()  # where exact, it has every queue with jobs (and none other)
        self.attrs = queue_usage(handle, set(kept) if kept is not None else {job.queue for job in handle.jobs.values()})
        water_fill(self.attrs, handle.total)
        # (queue, request) -> the queue's allocation when a pod of that request was refused, and
        # the refusal: a backlog's pods ask again and again with nothing allocated in between
        self._refusals: dict[tuple[str, bytes], tuple[bytes, Status]] = {}
        self.devices = DeviceQuota.of(handle.dra, handle.queues.values(), lambda queue: [queue])
        if self.devices is not None:
            for job in handle.jobs.values():
                self.devices.account(job)

    def deserved_shares(self) -> dict[str, np.ndarray]:
        """What each queue with jobs deserves this session (water-filled by weight)."""
        return {name: attr.deserved for name, attr in self.attrs.items()}

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        ls, rs = self._share(left.name), self._share(right.name)
        return -1 if ls < rs else (1 if ls > rs else 0)

    def overused(self, queue: QueueInfo) -> bool:
        attr = self.attrs.get(queue.name)
        return attr is not None and less_equal(attr.deserved, attr.allocated)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status:
        attr = self.attrs.get(queue.name)
        if not queue.is_open or attr is None:
            return refused()
        req = task.resreq
        key = (queue.name, req.tobytes())
        kept = self._refusals.get(key)
        if kept is not None and kept[0] == attr.allocated.tobytes():  # deserved holds for the session
            return kept[1]
        if not less_equal_on(attr.allocated + req, attr.deserved, req):
            status = refused(over_share(self.handle.dims.names, attr.allocated, req, attr.deserved, "deserved"))
            self._refusals[key] = (attr.allocated.tobytes(), status)
            return status
        if self.devices is not None and (why := self.devices.refusal(queue.name, [task], with_admitted=False)):
            return refused(why)
        return ALLOWED

    def admits_in_row(self, queue: QueueInfo, task: TaskInfo, count: int) -> int | None:
        """The j-th pod is admitted while allocated + j x request stays within deserved (the
        figure charging them one by one reaches, where `repeats_exactly`); devices: pod by pod."""
        attr = self.attrs.get(queue.name)
        if not queue.is_open or attr is None:
            return 0
        req = task.resreq
        if self.devices is not None or req is None or not repeats_exactly(attr.allocated, req, count):
            return None
        mask = req > EPSILON
        steps = np.arange(1, count + 1, dtype=float)[:, None]
        fits = (attr.allocated[mask] + steps * req[mask] < attr.deserved[mask] + EPSILON).all(axis=1)
        return count if fits.all() else int(np.argmin(fits))

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        """As Allocatable: a queue that is not Open never reclaims."""
        return self.allocatable(queue, task)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Victims come only from queues allocated beyond their deserved share, while they are."""
        victims = []
        allocations: dict[str, np.ndarray] = {}
        for task in candidates:
            queue = self.handle.jobs[task.job_uid].queue
            attr = self.attrs.get(queue)
            if attr is None:
                continue
            allocated = allocations.setdefault(queue, attr.allocated.copy())
            if not less_equal(allocated, attr.deserved):
                allocated -= task.resreq
                victims.append(task)
        return victims

    def job_enqueueable(self, job: JobInfo) -> int:
        queue = self.handle.queues[job.queue]
        attr = self.attrs[job.queue]
        if not queue.is_open:
            self.handle.note_job(job, f"queue {queue.name} is {queue.state}")
            return REJECT
        if self.devices is not None and (why := self.devices.refusal(
                queue.name, min_claim_tasks(job), with_admitted=True)):
            self.handle.note_job(job, why)
            return REJECT
        if job.min_resources is None:
            if self.devices is not None:
                self.devices.admit(job)
            return PERMIT
        min_res = job_min_resources(self.handle, job)
        future = min_res + attr.allocated + attr.inqueue - attr.elastic
        if less_equal_on(future, attr.real_capability, future):
            attr.inqueue += less_gated(job, min_res)
            if self.devices is not None:
                self.devices.admit(job)
            return PERMIT
        self.handle.note_job(job, self._why_not_admitted(queue, attr, min_res, future))
        return REJECT

    def _why_not_admitted(self, queue: QueueInfo, attr: QueueAttr, min_res: np.ndarray,
                          future: np.ndarray) -> str:
        """Which resources do not fit, with the numbers: first whether the job can never be
        admitted (more than the queue's capability or the cluster); else "quota" when the queue's
        own capability is what the job exceeds now, else the cluster (less others' guarantees) is full."""
        names = self.handle.dims.names
        never = never_fits(names, min_res, attr.capability, self.handle.total)
        if never is not None:
            return f"queue {queue.name}: {never}"
        short = [i for i in range(len(names)) if min_res[i] > EPSILON and future[i] > attr.real_capability[i] + EPSILON]
        quota = [i for i in short if attr.capability[i] <= attr.real_capability[i] + EPSILON]

        def amounts(i: int) -> str:
            limit = "its capability" if i in quota else "what the cluster leaves it"
            used = attr.allocated[i] + attr.inqueue[i] - attr.elastic[i]
            return (f"{names[i]}: the job needs {format_value(names[i], min_res[i])}, the queue uses "
                    f"{format_value(names[i], max(used, 0.0))} of {format_value(names[i], attr.real_capability[i])}"
                    f" ({limit})")

        detail = "; ".join(amounts(i) for i in short)
        if quota:
            return f"queue {queue.name} resource quota insufficient ({detail})"
        return f"cluster full for queue {queue.name}, which sets no quota on it ({detail})"

    def charge(self, task: TaskInfo, sign: int) -> None:
        job = self.handle.jobs.get(task.job_uid)
        attr = self.attrs.get(job.queue) if job is not None else None
        if attr is not None:
            attr.allocated += sign * task.resreq
            attr.share = None
        if job is not None and self.devices is not None:
            self.devices.charge(job.queue, task, sign)

    def charge_run(self, tasks: Sequence[TaskInfo], sign: int) -> None:
        job = self.handle.jobs.get(tasks[0].job_uid)
        attr = self.attrs.get(job.queue) if job is not None else None
        if attr is None or self.devices is not None or any(task.job_uid != job.uid for task in tasks) \
                or not charge_repeated(attr.allocated, tasks, sign):
            super().charge_run(tasks, sign)
            return
        attr.share = None

    def _share(self, queue: str) -> float:
        attr = self.attrs.get(queue)
        if attr is None:
            return 0.0
        if attr.share is None:
            attr.share = dominant_share(attr.allocated, attr.deserved)
        return attr.share


