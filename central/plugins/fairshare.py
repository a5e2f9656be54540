"""fairshare: per-namespace fair share within a queue, with a memory of past usage (Volcano's
`fairshare` plugin, as proposed for v1.16).

Each targeted queue tracks, per namespace, the resource-seconds its running tasks consumed of
one resource (`fairshare.resourceKey`, per queue `fairshare.resourceKey.<queue>`; in
Volcano's units: millicores, milli-GPUs), decayed with a half-life:
    usage <- usage * 2^(-elapsed / halfLife) + running * elapsed
at every session. Within one queue, the job whose namespace used less goes first (usages
within 1 resource-second are equal), then the one whose namespace runs less now; jobs of
different queues, or of queues not targeted, get no opinion. With
`fairshare.enableEnqueueGate`, a namespace running at or above its max-min fair share of the
queue (its capability of the resource, else the cluster's) may not enqueue a job that asks
for the resource.

Usage lives in the scheduler's memory; with `fairshare.persistState` it is also written, at
most every `fairshare.flushIntervalSeconds` of the cycle's clock, to the annotation
`caldera.sh/fairshare-usage` on each Queue, and read back by a scheduler that starts without
it. (Volcano keeps it in one ConfigMap; `fairshare.stateNamespace` and
`fairshare.stateConfigMap` are accepted and unused.)

One deliberate difference: the running tally integrated over the time between two sessions
is the one the earlier session closed with (what it left running and just placed), where
Volcano's takes the one the later session opens with. Both are the same at Volcano's one-second
period; under `caldera simulate`, which runs a cycle when a pod finishes, the closing tally
counts a finished pod's last stretch, where the opening one would drop it. The first session
after a start, with no earlier tally, uses the opening one, as Volcano does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from central.framework import extension as ext
from central.framework.plugin import ABSTAIN, REJECT, Arguments, Plugin
from central.model.objects import JobInfo, TaskInfo
from central.plugins.usagerecord import half_life_factor, read_record, write_record
from central.resources.vectors import format_value

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

ANNOTATION = "caldera.sh/fairshare-usage"
PREFIX = "fairshare."
USAGE_EPSILON = 1.0  # resource-seconds: usages closer than this are equal
CLEANUP_BELOW = 0.01  # decayed usage below this is forgotten
UNKNOWN_NAMESPACE = "_unknown"


@dataclass(frozen=True)
class Settings:
    target_queues: frozenset[str] | None  # None: every queue
    resource_key: str
    queue_resource_keys: dict[str, str]
    half_life: float  # seconds
    enqueue_gate: bool
    persist: bool
    flush_interval: float  # seconds


@dataclass(frozen=True)
class Memory:
    """What the plugin keeps between sessions (replaced whole, never edited: a rolled back
    session puts the previous one back)."""

    usage: dict[str, dict[str, float]]  # queue -> namespace -> decayed resource-seconds
    updated: datetime | None  # the clock of the session that last decayed and accrued
    running: dict[str, dict[str, float]] | None  # queue -> namespace -> running at that session's close
    flushed: datetime | None  # when the annotations were last handed over


def _positive_int(args: Arguments, key: str, default: int) -> int:
    raw = args.get(key, str(default), object)
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if isinstance(raw, bool) or value <= 0:
        raise args.error(key, f"expected a positive whole number, got {raw!r}")
    return value


def fair_shares(demand: dict[str, float], total: float) -> dict[str, float]:
    """Max-min fairness: namespaces asking less than an equal split get what they ask, the
    rest share what remains equally. Namespaces asking nothing get no share."""
    shares: dict[str, float] = {}
    remaining = {ns: d for ns, d in demand.items() if d > 0}
    available = total
    if total <= 0:
        return shares
    while remaining:
        equal = available / len(remaining)
        satisfied = [ns for ns, d in remaining.items() if d <= equal]
        if not satisfied:
            shares.update(dict.fromkeys(remaining, equal))
            break
        for ns in satisfied:
            shares[ns] = remaining.pop(ns)
            available -= shares[ns]
    return shares


class Fairshare(Plugin, ext.JobOrder, ext.JobEnqueueable, ext.AllocationEvents, ext.SessionClose):
    name = "fairshare"
    closes_by_state = True  # its last word keeps usage and annotates queues: no condition
    time_sensitive = True  # usage decays and accrues with the clock alone

    @classmethod
    def read_arguments(cls, args: Arguments) -> Settings:
        queues_arg = str(args.get(PREFIX + "targetQueues", "", object) or "")
        targets = frozenset(q.strip() for q in queues_arg.split(",") if q.strip()) or None
        per_queue: dict[str, str] = {}
        for key in args.raw:
            if key.startswith(PREFIX + "resourceKey."):
                queue = key[len(PREFIX + "resourceKey."):]
                value = str(args.get(key, "", object) or "").strip()
                if targets is None or queue not in targets:
                    raise args.error(key, "a per-queue resource applies only to a queue named in "
                                          "fairshare.targetQueues (as Volcano reads it)")
                if value:
                    per_queue[queue] = value
        args.accept(PREFIX + "stateNamespace", PREFIX + "stateConfigMap")  # Volcano's ConfigMap: see the docstring
        return Settings(
            target_queues=targets,
            resource_key=str(args.get(PREFIX + "resourceKey", "", object) or "").strip() or "nvidia.com/gpu",
            queue_resource_keys=per_queue,
            half_life=60.0 * _positive_int(args, PREFIX + "halfLifeMinutes", 240),
            enqueue_gate=args.get(PREFIX + "enableEnqueueGate", False, bool),
            persist=args.get(PREFIX + "persistState", False, bool),
            flush_interval=float(_positive_int(args, PREFIX + "flushIntervalSeconds", 30)),
        )

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.settings: Settings
        settings, now = self.settings, handle.now
        names = settings.target_queues if settings.target_queues is not None else handle.queues.keys()
        self.columns: dict[str, int | None] = {}  # targeted queue -> its resource's column (None: not in the cluster)
        self.totals: dict[str, float] = {}
        for queue in names:
            col = handle.dims.index.get(settings.queue_resource_keys.get(queue, settings.resource_key))
            self.columns[queue] = col
            self.totals[queue] = self._queue_total(queue, col)
        self.running: dict[str, dict[str, float]] = {q: {} for q in self.columns}
        demand: dict[str, dict[str, float]] = {q: {} for q in self.columns}
        for job in handle.jobs.values():
            queue = self._targeted(job)
            col = self.columns.get(queue) if queue else None
            if queue is None or col is None:
                continue
            ns = job.namespace or UNKNOWN_NAMESPACE
            if job.allocated is not None and job.allocated[col] > 0:
                self.running[queue][ns] = self.running[queue].get(ns, 0.0) + float(job.allocated[col])
            if job.pending_request is not None and job.pending_request[col] > 0:
                demand[queue][ns] = demand[queue].get(ns, 0.0) + float(job.pending_request[col])
        memory = handle.recall(self.name, "memory") or self._read_back()
        self.usage = self._advance(memory, now)  # the session's snapshot: orders read it, nothing edits it
        self.memory = memory
        self.shares = {q: fair_shares({ns: self.running[q].get(ns, 0.0) + demand[q].get(ns, 0.0)
                                       for ns in self.running[q].keys() | demand[q].keys()}, self.totals[q])
                       for q in self.columns}

    def _queue_total(self, queue: str, col: int | None) -> float:
        if col is None:
            return 0.0
        info = self.handle.queues.get(queue)
        name = self.handle.dims.names[col]
        if info is not None and info.capability.get(name, 0.0) > 0:
            return info.capability[name]
        return float(self.handle.total[col])

    def _targeted(self, job: JobInfo) -> str | None:
        """The job's queue if fairshare applies to it (it exists and is targeted), else None."""
        if job.queue not in self.handle.queues or job.queue not in self.columns:
            return None
        return job.queue

    def _read_back(self) -> Memory:
        """Usage as the Queues' annotations keep it (persistState), decayed to the newest record."""
        if not self.settings.persist:
            return Memory({}, None, None, None)
        records = {name: r for name, q in self.handle.queues.items() if (r := read_record(q, ANNOTATION)) is not None}
        if not records:
            return Memory({}, None, None, None)
        newest = max(r.updated for r in records.values())
        half_life = self.settings.half_life
        usage = {name: {ns: v * half_life_factor((newest - r.updated).total_seconds(), half_life)
                        for ns, v in r.usage.items()}
                 for name, r in records.items()}
        return Memory(usage, newest, None, newest)

    def _advance(self, memory: Memory, now: datetime) -> dict[str, dict[str, float]]:
        """Usage decayed to `now`, plus what ran since the last session."""
        usage = {q: dict(by_ns) for q, by_ns in memory.usage.items()}
        if memory.updated is None:
            return usage
        elapsed = (now - memory.updated).total_seconds()
        if elapsed <= 0:
            return usage
        factor = half_life_factor(elapsed, self.settings.half_life)
        for by_ns in usage.values():
            for ns in list(by_ns):
                by_ns[ns] *= factor
                if by_ns[ns] < CLEANUP_BELOW:
                    del by_ns[ns]
        ran = memory.running if memory.running is not None else self.running
        for queue, by_ns in ran.items():
            if queue not in self.columns:
                continue
            for ns, amount in by_ns.items():
                if amount > 0:
                    target = usage.setdefault(queue, {})
                    target[ns] = target.get(ns, 0.0) + amount * elapsed
        return usage

    # --- ordering and the enqueue gate ---------------------------------------------------------

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        queue = self._targeted(left)
        if queue is None or queue != self._targeted(right):
            return 0
        usage = self.usage.get(queue, {})
        lns, rns = left.namespace or UNKNOWN_NAMESPACE, right.namespace or UNKNOWN_NAMESPACE
        lu, ru = usage.get(lns, 0.0), usage.get(rns, 0.0)
        if lu < ru - USAGE_EPSILON:
            return -1
        if lu > ru + USAGE_EPSILON:
            return 1
        running = self.running[queue]
        lr, rr = running.get(lns, 0.0), running.get(rns, 0.0)
        return -1 if lr < rr else (1 if lr > rr else 0)

    def job_enqueueable(self, job: JobInfo) -> int:
        queue = self._targeted(job)
        if not self.settings.enqueue_gate or queue is None:
            return ABSTAIN
        col = self.columns[queue]
        ns = job.namespace or UNKNOWN_NAMESPACE
        share = self.shares[queue].get(ns)
        if share is None or col is None:
            return ABSTAIN
        running = self.running[queue].get(ns, 0.0)
        asks = sum(float(t.resreq[col]) for t in job.tasks.values() if t.resreq is not None)
        if running >= share and asks > 0:
            name = self.handle.dims.names[col]
            self.handle.note_job(job, f"namespace {ns} runs {format_value(name, running)} {name} in queue {queue}, "
                                      f"at or above its fair share {format_value(name, share)} (fairshare)")
            return REJECT
        return ABSTAIN

    # --- the live running tally ----------------------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        self._charge(task, +1)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._charge(task, -1)

    def _charge(self, task: TaskInfo, sign: int) -> None:
        job = self.handle.jobs.get(task.job_uid)
        queue = self._targeted(job) if job is not None else None
        col = self.columns.get(queue) if queue else None
        if job is None or queue is None or col is None or task.resreq is None:
            return
        ns = job.namespace or UNKNOWN_NAMESPACE
        running = self.running[queue]
        running[ns] = max(0.0, running.get(ns, 0.0) + sign * float(task.resreq[col]))

    # --- close: remember, and now and then write down -------------------------------------------

    def on_session_close(self) -> None:
        now, memory = self.handle.now, self.memory
        flushed = memory.flushed
        if self.settings.persist and (flushed is None or (now - flushed).total_seconds() >= self.settings.flush_interval):
            for queue, by_ns in self.usage.items():
                if queue in self.handle.queues:
                    self.handle.annotate_queue(queue, ANNOTATION, write_record(now, by_ns))
            flushed = now
        updated = now if memory.updated is None or now > memory.updated else memory.updated
        self.handle.remember(self.name, "memory", Memory(
            self.usage, updated, {q: dict(by_ns) for q, by_ns in self.running.items()}, flushed))

