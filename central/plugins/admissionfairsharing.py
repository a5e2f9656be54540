"""admissionfairsharing: queues that used less over time go first (Kueue's Admission Fair
Sharing, applied to Volcano queues).

Each queue keeps `consumed`, an exponentially decayed average of what its jobs hold, per
resource (in Kubernetes units: cpu in cores, memory in bytes, extended resources as counted).
At most every `usageSamplingInterval` of the cycle's clock it is sampled, as Kueue samples a
LocalQueue:
    alpha    = 1 - 0.5^(elapsed / usageHalfLifeTime)
    consumed = consumed * (1 - alpha) + allocated_now * alpha
Between samples every task a session places adds an entry penalty of
`alpha(usageSamplingInterval) * its request`, so a queue that has just been given much does not
keep winning until the next sample (a sample clears the penalties: what was placed is in the
allocation by then). A queue's usage is
    sum over resources of resourceWeights[r] (default 1) * (consumed[r] + penalty[r]) / weight
with the queue's `spec.weight` where Kueue has the LocalQueue's fair-sharing weight (0: never
first). The queue with the lower usage goes first (QueueOrder); with `victimQueueOrder: true`
reclaim also takes victims from the queue with the higher usage first (VictimQueueOrder).

A sample is also written to the Queue's annotation `caldera.sh/admission-fair-sharing`
(Kueue shows it in the LocalQueue's status), and a scheduler starting without it in memory
reads it back, so a restart keeps the order. The penalties live in memory only, as Kueue's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.model.fields import parse_duration
from central.model.objects import QueueInfo, TaskInfo, TaskStatus
from central.plugins.usagerecord import read_record, write_record
from central.resources.vectors import MEMORY

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

ANNOTATION = "caldera.sh/admission-fair-sharing"


@dataclass(frozen=True)
class Settings:
    half_life: float  # seconds; 0: usage never moves (as Kueue's alpha of 0)
    sampling: float  # seconds
    weights: dict[str, float]  # resource -> weight (unlisted: 1)
    victim_order: bool


@dataclass(frozen=True)
class QueueUsage:
    """One queue's record between sessions (replaced whole, never edited)."""

    consumed: dict[str, float]  # resource -> decayed average held
    updated: datetime  # when it was last sampled
    penalty: dict[str, float]  # resource -> entry penalties since that sample


def alpha(elapsed: float, half_life: float) -> float:
    """Kueue's rate: how much a sample `elapsed` seconds after the last one moves the average."""
    return 0.0 if half_life <= 0 else 1.0 - 0.5 ** (elapsed / half_life)


class AdmissionFairSharing(Plugin, ext.QueueOrder, ext.VictimQueueOrder, ext.AllocationEvents, ext.SessionClose):
    name = "admissionfairsharing"
    closes_by_state = True  # its last word keeps usage and annotates queues: no condition
    time_sensitive = True  # usage is sampled and decays with the clock alone

    @classmethod
    def read_arguments(cls, args: Arguments) -> Settings:
        where = f"plugin {cls.name}: arguments."
        half_life = parse_duration(args.get("usageHalfLifeTime", "168h", str), where + "usageHalfLifeTime")
        sampling = parse_duration(args.get("usageSamplingInterval", "5m", str), where + "usageSamplingInterval")
        if sampling <= timedelta(0):
            raise args.error("usageSamplingInterval", "must be greater than 0")
        weights: dict[str, float] = {}
        for name, value in args.get("resourceWeights", {}, dict).items():
            try:
                weight = float(value)
            except (TypeError, ValueError):
                weight = -1.0
            if isinstance(value, bool) or not 0 <= weight < float("inf"):
                raise args.error(f"resourceWeights.{name}", f"expected a number at least 0, got {value!r}")
            weights[str(name)] = weight
        return Settings(half_life.total_seconds(), sampling.total_seconds(), weights,
                        args.get("victimQueueOrder", False, bool))

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.settings: Settings
        dims, now = handle.dims, handle.now
        # canonical units (millicores, milli-units) back to Kubernetes' (cores, counts); memory stays bytes
        self.scale = np.array([1.0 if name == MEMORY else 1e-3 for name in dims.names])
        self.weights = np.array([self.settings.weights.get(name, 1.0) for name in dims.names])
        self.entry_rate = alpha(self.settings.sampling, self.settings.half_life)
        allocated = {name: dims.zeros() for name in handle.queues}
        for job in handle.jobs.values():
            if job.queue in allocated and job.allocated is not None:
                allocated[job.queue] += job.allocated
        remembered: dict[str, QueueUsage] = handle.recall(self.name, "queues") or {}
        self.sampled: set[str] = set()  # queues sampled this session: their annotation is written at close
        self.records: dict[str, QueueUsage] = {}
        for name, queue in handle.queues.items():
            record = remembered.get(name) or self._read_back(queue, now)
            if (now - record.updated).total_seconds() >= self.settings.sampling:
                rate = alpha((now - record.updated).total_seconds(), self.settings.half_life)
                held = self._as_named(allocated[name] * self.scale)
                consumed = {r: record.consumed.get(r, 0.0) * (1 - rate) + held.get(r, 0.0) * rate
                            for r in record.consumed.keys() | held.keys()}
                record = QueueUsage({r: v for r, v in consumed.items() if v > 0}, now, {})
                self.sampled.add(name)
            self.records[name] = record
        self.penalty = {name: dims.vector(r.penalty) for name, r in self.records.items()}
        self.consumed = {name: dims.vector(r.consumed) for name, r in self.records.items()}
        self.usage: dict[str, float] = {}  # weighted usage, computed when an ordering asks, dropped on change

    def _read_back(self, queue: QueueInfo, now: datetime) -> QueueUsage:
        record = read_record(queue, ANNOTATION)
        if record is None or record.updated > now:
            return QueueUsage({}, now, {})
        return QueueUsage(record.usage, record.updated, {})

    def _as_named(self, vector: np.ndarray) -> dict[str, float]:
        return {name: float(v) for name, v in zip(self.handle.dims.names, vector) if v > 0}

    def _usage(self, queue: QueueInfo) -> float:
        usage = self.usage.get(queue.name)
        if usage is None:
            consumed = self.consumed.get(queue.name)
            if consumed is None:
                usage = 0.0
            elif queue.weight <= 0:
                usage = float("inf")
            else:
                usage = float(np.dot(self.weights, consumed + self.penalty[queue.name])) / queue.weight
            self.usage[queue.name] = usage
        return usage

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        lu, ru = self._usage(left), self._usage(right)
        return -1 if lu < ru else (1 if lu > ru else 0)

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor_queue: QueueInfo) -> int:
        if not self.settings.victim_order:
            return 0
        lu, ru = self._usage(left), self._usage(right)
        return -1 if lu > ru else (1 if lu < ru else 0)

    def on_allocate(self, task: TaskInfo) -> None:
        self._charge(task, +1)

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.status == TaskStatus.PENDING:  # a placement undone; an eviction keeps the penalty, as Kueue's
            self._charge(task, -1)

    def _charge(self, task: TaskInfo, sign: int) -> None:
        job = self.handle.jobs.get(task.job_uid)
        if job is None or job.queue not in self.penalty or task.resreq is None:
            return
        self.penalty[job.queue] += sign * self.entry_rate * task.resreq * self.scale
        self.usage.pop(job.queue, None)

    def on_session_close(self) -> None:
        kept = {name: QueueUsage(record.consumed, record.updated,
                                 self._as_named(np.maximum(self.penalty[name], 0)))
                for name, record in self.records.items()}
        self.handle.remember(self.name, "queues", kept)
        for name in sorted(self.sampled):
            if not kept[name].consumed and ANNOTATION not in self.handle.queues[name].annotations:
                continue  # nothing held, nothing kept before: no record to write
            self.handle.annotate_queue(name, ANNOTATION, write_record(kept[name].updated, kept[name].consumed))
