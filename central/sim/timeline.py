"""Simulated time: `caldera simulate --until`, a discrete-event run of the real cycle.

The clock jumps from one instant to the next; at each instant, in order:
1. what falls due happens: submissions (`sim.caldera.sh/submit-at`), pods whose work is
   done (kubelet.py), job-controller timers (policy timeouts, TTL);
2. the controllers run until they have nothing left to do (world.py), terminating pods go;
3. on the scheduler's period grid (k x --period), and only when something it sees changed
   since its last cycle while something waits to be admitted or placed, one scheduling cycle
   (`run_cycle`, the cluster's very code), whose binds and evictions the controllers then
   react to;
4. the figures are sampled (metrics.py).
The next instant is the earliest of: the next event, the next finish, the next cycle when
something changed. A stretch where nothing can happen is skipped in one step, so a week with
ten thousand jobs costs what its events cost, not 604,800 cycles. With tdm, sla or a usage plugin
(fairshare, admissionfairsharing) in the configuration, time itself changes decisions (a window
opens or closes, a deadline passes, usage accrues and decays), so while pods wait or run a
cycle also runs at least every IDLE_RECHECK seconds.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from central.framework.conf import SchedulerConf
from central.model import podlife
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.scheduler.cycle import run_cycle
from central.sim.metrics import Recorder
from central.sim.simulate import SimulationResult
from central.sim.world import ENDED, World, key_of

IDLE_RECHECK = 60.0
SUBMIT_ORDER = {"Queue": 0, "Command": 1, "JobTemplate": 2, "CronJob": 3, "JobFlow": 3, "Job": 4, "PodGroup": 5, "Pod": 6}


@dataclass
class TimedResult:
    time: float  # seconds simulated
    cycles: int
    instants: int  # the instants the clock stopped at
    events: int  # submissions, pod finishes and controller timers processed
    wall_s: float
    jobs: dict[str, dict[str, Any]]
    metrics: dict[str, Any]
    still_running: list[str]  # jobs not finished when --until was reached
    last: SimulationResult = field(default_factory=SimulationResult)  # binds and evictions of the whole run,
    # the rest (pipelined, pending, podgroups, queues) as the last cycle left them
    timeline: list[tuple[float, dict[str, float], dict[str, float]]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**self.last.to_json(), "cycles": self.cycles, "time": round(self.time, 3), "events": self.events,
                "instants": self.instants, "wall_s": round(self.wall_s, 3), "jobs": self.jobs,
                "metrics": self.metrics, "still_running": self.still_running}


class Timeline:
    def __init__(self, cache: ClusterCache, conf: SchedulerConf, start: datetime, period: float = 1.0,
                 stuck_after: float = 600.0):
        self.cache, self.conf, self.start, self.period = cache, conf, start, period
        self.stuck_after = stuck_after
        self.world = World(cache, start.timestamp(), self._timer)
        self.recorder = Recorder(cache, self.world)
        self._events: list[tuple[float, int, int, Any]] = []  # (time, order, seq, object or job key)
        self._seq = itertools.count()
        self.submitted: dict[str, float] = {}
        self.last = SimulationResult()
        self.events = 0
        self.time_sensitive = conf.time_sensitive()  # plugins whose answers change with the clock alone
        self.acts_on_running = conf.acts_on_running()  # actions that may decide with no pod waiting

    def submit(self, obj: dict[str, Any]) -> None:
        """Schedule `obj` (Job, PodGroup, Pod, Queue, Command, CronJob, JobFlow or JobTemplate)
        for its submit-at time."""
        at = podlife.submit_at(obj)
        if obj["kind"] in ("Job", "PodGroup"):
            self.submitted.setdefault(key_of(obj), at)
        heapq.heappush(self._events, (at, SUBMIT_ORDER[obj["kind"]], next(self._seq), obj))

    def _timer(self, when: float, job_key: str) -> None:
        heapq.heappush(self._events, (when, 9, next(self._seq), job_key))

    def run(self, until: float, progress: Callable[[float], None] | None = None) -> TimedResult:
        started = time.perf_counter()
        now, last_cycle, cycles, instants = 0.0, -math.inf, 0, 0
        while True:
            instants += 1
            self._happen(now)
            if self._wanted() and now >= last_cycle + self.period - 1e-9:
                self._cycle(now)
                last_cycle, cycles = now, cycles + 1
            self.recorder.sample(now)
            if progress is not None:
                progress(now)
            following = self._next_instant(now, last_cycle)
            if following is None or following > until:
                end = until if self._unfinished() else now  # a deadlock lasts until --until
                break
            now = following
        self.recorder.finish(end)
        jobs = self.recorder.jobs(self.submitted)
        return TimedResult(
            time=end, cycles=cycles, instants=instants, events=self.events, wall_s=time.perf_counter() - started,
            jobs=jobs, metrics=self.recorder.metrics(jobs, self.stuck_after), last=self.last,
            still_running=sorted(k for k, j in jobs.items() if j["phase"] not in ENDED),
            timeline=self.recorder.timeline)

    def _happen(self, now: float) -> None:
        while self._events and self._events[0][0] <= now + 1e-9:
            _, _, _, what = heapq.heappop(self._events)
            self.events += 1
            if isinstance(what, str):
                self.world.wake(what)
            else:  # a copy: the world edits its objects, and the workload may run again under another config
                self.world.submit(_copied(what), now)
        for pod in self.world.kubelets.finished(now):
            self.events += 1
            self.world.finish_pod(pod, now)
        self._settle(now)

    def _settle(self, now: float) -> None:
        self.world.settle(now)
        if self.world.deleting:
            self.world.reap(now)
            self.world.settle(now)
        if self.world.retiring:
            self.world.retire(now)

    def _cycle(self, now: float) -> None:
        self.world.changed = False
        result = run_cycle(self.cache, self.conf, self.world.sink(now), now=self.start + timedelta(seconds=now))
        self.last.add(result)
        self._settle(now)

    def _next_instant(self, now: float, last_cycle: float) -> float | None:
        candidates = [t for t in (self._events[0][0] if self._events else None,
                                  self.world.kubelets.next_finish()) if t is not None]
        if self._wanted(idle_too=False):
            candidates.append(self._grid(max(now, last_cycle + self.period)))
        elif self.time_sensitive and self._active():
            candidates.append(self._grid(max(now + IDLE_RECHECK, last_cycle + self.period)))
        return min(candidates) if candidates else None

    def _grid(self, t: float) -> float:
        return math.ceil(t / self.period - 1e-9) * self.period

    def _wanted(self, idle_too: bool = True) -> bool:
        """Whether a cycle could decide something new: the world changed and something waits to
        be admitted or placed (with nothing waiting, the actions that admit, place or preempt
        have nothing to do; one that acts on running pods may still evict), or, with
        time-sensitive plugins, `idle_too`."""
        if self.world.changed and (self.acts_on_running or self._waiting()):
            return True
        return idle_too and self.time_sensitive and self._active()

    def _waiting(self) -> bool:
        pending, jobs = TaskStatus.PENDING, self.cache.jobs  # (counts read directly: this runs at every instant)
        for uid in self.cache.unrested:  # a job at rest waits for nothing, and the others are among these
            job = jobs.get(uid)
            if job is not None and (job.counts.get(pending) or job.has_podgroup and job.phase in ("", "Pending")):
                return True
        return False

    def _active(self) -> bool:
        """Pods wait or run: a time-sensitive plugin (a window, a deadline) may change what the
        scheduler does."""
        return bool(self.world.kubelets.gang_of) or self._waiting()

    def _unfinished(self) -> bool:
        return any(self.world.job_phase(k) not in ENDED for k in self.world.job_phases)


def _copied(value: Any) -> Any:
    """A deep copy of a manifest's tree (dicts, lists and scalars, as YAML and the trace reader
    make them): what `copy.deepcopy` gives, at a third of its cost; anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    if kind is list:
        return [_copied(v) for v in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)
