"""How long a pod is expected to run, and so when a running pod is expected to end.

Sources, the first that answers wins:
- the pod's annotation `caldera.sh/running-estimate` (a Go duration such as `20m`);
- the same annotation on its PodGroup: the job controller writes it there from a Volcano
  Job's `spec.runningEstimate` (which Volcano declares and never reads), and a Job's own
  annotations reach its PodGroup as Volcano copies them;
- the median of the runtimes observed in the pod's queue (`RuntimeHistory`);
- a default the caller gives.

A pod that ran past its estimate is expected to end `OVERRUN_GRACE` from now: it may end at
any moment, and the estimate says nothing more. Kept free of scheduling decisions so that
every reader (reservations, start-time estimates) sees the same figures.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import median

from central.errors import InputError
from central.model.fields import parse_duration, parse_time
from central.model.objects import JobInfo, TaskInfo

ANNOTATION = "caldera.sh/running-estimate"
OVERRUN_GRACE = 60.0  # seconds: when a pod past its estimate is expected to end, from now


def declared(annotations: Mapping[str, str]) -> float | None:
    """Seconds the annotation declares; None when absent, unreadable or not positive."""
    text = annotations.get(ANNOTATION)
    if text is None:
        return None
    try:
        seconds = parse_duration(text, ANNOTATION).total_seconds()
    except InputError:
        return None
    return seconds if seconds > 0 else None


@dataclass
class RuntimeHistory:
    """The latest observed runtimes per queue (seconds), `size` of them at most per queue."""

    size: int = 100
    runtimes: dict[str, deque[float]] = field(default_factory=dict)
    # queue -> the median of its runtimes, until the next observation: asked once per running pod
    _typical: dict[str, float] = field(default_factory=dict, init=False, repr=False, compare=False)

    def observe(self, queue: str, seconds: float) -> None:
        if seconds > 0:
            self.runtimes.setdefault(queue, deque(maxlen=self.size)).append(seconds)
            self._typical.pop(queue, None)

    def typical(self, queue: str) -> float | None:
        known = self._typical.get(queue)
        if known is None:
            seen = self.runtimes.get(queue)
            if not seen:
                return None
            known = self._typical[queue] = median(seen)
        return known

    def copy(self) -> RuntimeHistory:
        return RuntimeHistory(self.size, {q: deque(v, maxlen=self.size) for q, v in self.runtimes.items()})


def runtime(task: TaskInfo | None, job: JobInfo, history: RuntimeHistory, default: float) -> float:
    """Seconds the task (None: a pod of the job not made yet) is expected to run."""
    if task is not None:
        own = declared(task.annotations)
        if own is not None:
            return own
    of_job = declared(job.annotations)
    if of_job is not None:
        return of_job
    typical = history.typical(job.queue)
    return typical if typical is not None else default


def started_at(task: TaskInfo, first_seen: float | None, now: float) -> float:
    """When the pod started, in epoch seconds: its PodScheduled time, else when first seen placed."""
    scheduled = _epoch(task.scheduled_at) if task.scheduled_at else None
    if scheduled is not None:
        return scheduled
    return first_seen if first_seen is not None else now


@lru_cache(maxsize=4096)
def _epoch(stamp: str) -> float | None:
    """An RFC 3339 time in epoch seconds, None where unreadable: every running pod's start is
    read again at each session, and pods bound together share their stamp."""
    try:
        return parse_time(stamp, "PodScheduled lastTransitionTime").timestamp()
    except InputError:
        return None


def expected_end(start: float, seconds: float, now: float) -> float:
    """When a pod that started at `start` and runs `seconds` is expected to end (epoch seconds)."""
    end = start + seconds
    return end if end > now else now + OVERRUN_GRACE
