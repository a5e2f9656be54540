"""Per-queue sums over a session's jobs, kept across sessions and updated for changed jobs only.

Proportion and overcommit (at session open) and the queue statuses (at close) each sum, per
queue, what every live job holds: allocated resources and pods, pending requests, what admitted
jobs hold of their minResources and the part beyond it, and how many jobs are in each phase. Between two cycles
most jobs do not change, so each job's terms are kept with the stamp they were worked out
under, and a queue's sums change by the difference when a job's terms do.

Invalidation rule: a job's terms are worked out again when its stamp differs: the JobInfo
object (a changed PodGroup, its queue and minResources included, is a new one), its `version`
(the cache bumps it at every change of the job's tasks, so at every change of `allocated`,
`pending_request` and the ready count), `phase` and `min_available`. A job no longer among
the session's jobs takes its terms out. A change in the number of dimensions (a new resource
name re-lays every vector) starts over.

Which stamps are looked at: a session's first call looks only at the jobs the cache changed,
added or dropped since the last answered call (`moved`: between sessions only the cache changes
jobs, and it tells each one here as it bumps its version; a rolled back session, whose phases go
back without one, or a change of which jobs sessions consider, makes the next call look at
all). Its close looks only at the jobs the session may have changed: those not at rest and
those it worked out again (`central.framework.closing`).

Exactness: adding and subtracting terms gives the sums that summing from scratch gives only
while every term is a whole number and every partial sum stays below 2**52 (2**53 for
the sum of two of them) (canonical units
are whole: millicores, bytes, counts). Where that does not hold `sums` answers None and the
caller sums from scratch, as it did before these sums were kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from central.model.objects import ALLOCATED_STATUSES, JobInfo, TaskStatus
from central.resources.vectors import Dimensions

_A, _B, _C, _D = ALLOCATED_STATUSES
EXACT = 2**52  # below it a float holds every whole number, a sum of two such too


def min_resources(job: JobInfo, dims: Dimensions) -> np.ndarray:
    """minResources over the dimensions (read-only: the cache's vector is shared)."""
    return job.min_request if job.min_request is not None else dims.vector(job.min_resources or {})


def less_gated(job: JobInfo, held: np.ndarray) -> np.ndarray:
    """What a job holds of its queue's admitted (inqueue) resources: `held` less what its pods
    behind a scheduling gate other than the queue's request, as Volcano's
    DeductSchGatedResources: a gated job must not keep other jobs from being admitted."""
    if not job.count(TaskStatus.PENDING):
        return held
    gated = [t.resreq for t in job.tasks.values()
             if t.status == TaskStatus.PENDING and t.externally_gated and t.resreq is not None]
    return np.maximum(held - np.sum(gated, axis=0), 0) if gated else held


def held_row(job: JobInfo, min_res: np.ndarray, allocated: np.ndarray) -> np.ndarray | None:
    """What the job holds of its queue's admitted resources before gated pods are deducted:
    its minResources while Inqueue, the part not yet allocated while Running with enough
    pods ready (and minResources set); None otherwise."""
    if job.phase == "Inqueue":
        return min_res
    if job.phase == "Running" and job.min_resources is not None and job.ready_num >= job.min_available:
        unallocated: np.ndarray = np.maximum(min_res - allocated, 0)
        return unallocated
    return None


@dataclass(slots=True)
class QueueSum:
    """One queue's sums over its jobs (live arrays: copy before changing them)."""

    allocated: np.ndarray
    pending: np.ndarray
    held: np.ndarray  # what its admitted jobs hold of their minResources, gated pods deducted
    elastic: np.ndarray  # allocated beyond minResources
    pods: int = 0  # allocated pods
    jobs: int = 0
    phases: dict[str, int] = field(default_factory=dict)  # PodGroup phase as the jobs have it ("" too) -> jobs


@dataclass(slots=True, eq=False)
class _Terms:
    job: JobInfo  # held, so that the object cannot be freed and another take its place
    version: int
    phase: str
    min_available: int
    queue: str
    allocated: np.ndarray
    pending: np.ndarray
    held: np.ndarray
    elastic: np.ndarray
    pods: int
    size: int  # the largest magnitude among the vectors, towards the exactness bound


def _terms(job: JobInfo, dims: Dimensions) -> _Terms | None:
    """The job's terms, or None when one is not a whole number below the exact bound."""
    assert job.allocated is not None and job.pending_request is not None  # laid out by the cache
    allocated, pending = job.allocated.copy(), job.pending_request.copy()
    min_res = min_resources(job, dims)
    held = held_row(job, min_res, allocated)
    held = dims.zeros() if held is None or not held.any() else less_gated(job, held).copy()
    elastic = np.maximum(allocated - min_res, 0)
    parts = np.concatenate((allocated, pending, held, elastic)).tolist()  # a few numbers: Python is quicker
    if not all(value.is_integer() for value in parts):  # inf and nan are not
        return None
    size = int(max(map(abs, parts), default=0))
    get = job.counts.get
    pods = get(_A, 0) + get(_B, 0) + get(_C, 0) + get(_D, 0)
    return _Terms(job, job.version, job.phase, job.min_available, job.queue, allocated, pending, held, elastic,
                  pods, size)


class QueueSums:
    """The sums, kept by the cache across sessions (see the module's doc)."""

    def __init__(self) -> None:
        self._terms: dict[str, _Terms] = {}
        self._sums: dict[str, QueueSum] = {}
        self._width = -1
        self._bound = 0  # the sum of every kept term's `size`: no partial sum exceeds it
        self._answered = False  # whether a call answered since the sums started over or were forgotten
        # the jobs the cache changed, added or dropped since the last call answered (it tells
        # each one here as it bumps its version)
        self.moved: dict[str, None] = {}

    def changed_since_last(self, jobs: Mapping[str, JobInfo]) -> list[JobInfo] | None:
        """Between sessions only the cache changes jobs, and it tells each one it changes or
        adds (`moved`): of `jobs`, those changed since the last call answered. None where no
        call has answered since the sums started over or were `forget`-ed. (A job that joins
        `jobs` unchanged, as a queue comes, is new to the sums: `sums` sees it by their count.)"""
        if not self._answered:
            return None
        return [jobs[uid] for uid in self.moved if uid in jobs]

    def forget(self) -> None:
        """A session that changed phases was rolled back (phases go back without a version):
        the next call looks at every job's stamp."""
        self._answered = False
        self.moved.clear()  # the next call looks at every job

    def sums(self, jobs: Mapping[str, JobInfo], dims: Dimensions,
             changed: Iterable[JobInfo] | None = None) -> dict[str, QueueSum] | None:
        """Each queue with jobs among `jobs` and its sums; None where they would not be exact.
        `changed`: the only ones of `jobs` that may have changed since the last call answered
        (`changed_since_last`, or a session's own account); the others' stamps are not looked at."""
        if len(dims) != self._width:
            self._start_over(len(dims))
        if changed is not None and not self._answered:  # nothing to go by
            changed = None
        terms = self._terms
        for uid, job in jobs.items() if changed is None else ((job.uid, job) for job in changed):
            kept = terms.get(uid)
            if (kept is not None and kept.job is job and kept.version == job.version and kept.phase == job.phase
                    and kept.min_available == job.min_available):
                continue
            if kept is not None:
                self._take_out(kept)
            fresh = _terms(job, dims)
            if fresh is None:
                self._start_over(len(dims))
                return None
            terms[uid] = fresh
            self._put_in(fresh, dims)
            if self._bound >= EXACT:  # a partial sum might round: sum from scratch
                self._start_over(len(dims))
                return None
        if len(terms) != len(jobs):  # some left, or some joined unchanged
            for uid in [uid for uid in terms if uid not in jobs]:
                self._take_out(terms.pop(uid))
            if len(terms) != len(jobs):  # terms are now among jobs: some are missing
                self._start_over(len(dims))
                return self.sums(jobs, dims)
        self._answered = True
        self.moved.clear()
        return self._sums

    def _start_over(self, width: int) -> None:
        self._terms, self._sums, self._width, self._bound, self._answered = {}, {}, width, 0, False
        self.moved.clear()

    def _put_in(self, terms: _Terms, dims: Dimensions) -> None:
        queue = self._sums.get(terms.queue)
        if queue is None:
            queue = self._sums[terms.queue] = QueueSum(dims.zeros(), dims.zeros(), dims.zeros(), dims.zeros())
        queue.allocated += terms.allocated
        queue.pending += terms.pending
        queue.held += terms.held
        queue.elastic += terms.elastic
        queue.pods += terms.pods
        queue.jobs += 1
        queue.phases[terms.phase] = queue.phases.get(terms.phase, 0) + 1
        self._bound += terms.size

    def _take_out(self, terms: _Terms) -> None:
        queue = self._sums[terms.queue]
        queue.jobs -= 1
        if not queue.jobs:
            del self._sums[terms.queue]
        else:
            queue.allocated -= terms.allocated
            queue.pending -= terms.pending
            queue.held -= terms.held
            queue.elastic -= terms.elastic
            queue.pods -= terms.pods
            left = queue.phases[terms.phase] - 1
            if left:
                queue.phases[terms.phase] = left
            else:
                del queue.phases[terms.phase]
        self._bound -= terms.size
