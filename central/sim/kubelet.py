"""The simulated kubelets of `caldera simulate --until`: when running pods finish.

The progress model (docs/simulate.md explains it for users):
- A pod starts the instant it is bound and has `sim.caldera.sh/duration` seconds of work
  to do (none: it runs until deleted). It exits with `sim.caldera.sh/exit-code`.
- A distributed job waits for its peers: a pod makes progress only while at least N pods of
  its job are running or have already succeeded, N being `sim.caldera.sh/min-peers`
  (default the job's minAvailable), whether or not the owner declared a gang.
- While the job's running pods span more than one node, a pod's work takes
  `sim.caldera.sh/cross-node-slowdown` times longer (default 1).
A job whose pods run but whose peers are missing is *starved*; the time it has been so is
what `stuck` in the results reports (the gang deadlock).

Finish times live in a heap; a change to a job's running set re-times its pods, and stale
heap entries are recognised by a per-pod token, so nothing is ever searched.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field


@dataclass(slots=True)
class RunningPod:
    key: str
    node: str
    remaining: float | None  # seconds of work left (at the gang's `since`); None: until deleted
    slowdown: float
    token: int = 0


@dataclass(slots=True)
class Gang:
    """The pods of one job as the progress model sees them."""

    needs: int
    running: dict[str, RunningPod] = field(default_factory=dict)
    succeeded: set[str] = field(default_factory=set)
    progressing: bool = False
    spanning: bool = False
    since: float = 0.0  # when `progressing`/`spanning` last changed
    starved_since: float | None = None
    first_progress: float | None = None
    longest_starved: tuple[float, float] = (0.0, 0.0)  # (from, seconds)


class Kubelets:
    def __init__(self) -> None:
        self._gangs: dict[str, Gang] = {}
        self.gang_of: dict[str, str] = {}  # pod key -> gang key
        self._heap: list[tuple[float, int, str, int]] = []  # (finish time, seq, pod key, token)
        self._seq = itertools.count()
        # Gangs whose pods started at their `since` and are not retimed yet, in the order of their
        # last start: a gang's pods bound in one cycle are retimed once, not once per pod. Every
        # other call retimes them first, so what it sees is what retiming at each start gives
        # (adding pods of one gang at one instant with one `needs` only ever turns progress on).
        self._started: dict[str, Gang] = {}

    @property
    def gangs(self) -> dict[str, Gang]:
        self._retime_started()
        return self._gangs

    def start(self, key: str, gang_key: str, needs: int, node: str, duration: float | None,
              slowdown: float, now: float) -> None:
        gang = self._gangs.get(gang_key)
        if gang is None:
            gang = self._gangs[gang_key] = Gang(needs=needs, since=now)
        elif gang_key in self._started and (gang.needs != needs or gang.since != now):
            self._retime_started()
        gang.needs = needs
        self._advance(gang, now)
        gang.running[key] = RunningPod(key, node, duration, slowdown)
        self.gang_of[key] = gang_key
        self._started.pop(gang_key, None)
        self._started[gang_key] = gang  # last: retimed after the gangs that started before

    def _retime_started(self) -> None:
        if self._started:
            started, self._started = self._started, {}
            for gang in started.values():
                self._retime(gang, gang.since)

    def stop(self, key: str, now: float, succeeded: bool = False) -> None:
        """The pod stopped running: it exited (`succeeded` when with 0), or is being deleted."""
        self._retime_started()
        gang_key = self.gang_of.get(key)
        if gang_key is None:
            return
        gang = self._gangs[gang_key]
        self._advance(gang, now)
        if gang.running.pop(key, None) is not None and succeeded:
            gang.succeeded.add(key)
        self._retime(gang, now)

    def remove(self, key: str, now: float) -> None:
        """The pod is gone: it neither runs nor counts as a peer that has done its part."""
        self.stop(key, now)
        gang_key = self.gang_of.pop(key, None)
        if gang_key is not None and key in self._gangs[gang_key].succeeded:
            self._gangs[gang_key].succeeded.discard(key)
            self._retime(self._gangs[gang_key], now)

    def next_finish(self) -> float | None:
        self._retime_started()
        while self._heap and not self._current(self._heap[0]):
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def finished(self, now: float) -> list[str]:
        """Pods whose work is done by `now`, in finishing order."""
        self._retime_started()
        out = []
        while self._heap and self._heap[0][0] <= now + 1e-9:
            entry = heapq.heappop(self._heap)
            if self._current(entry):
                out.append(entry[2])
        return out

    def starved(self, now: float, longer_than: float) -> dict[str, dict[str, float]]:
        """Jobs starved (running pods, too few peers) for more than `longer_than` seconds at
        some point until `now`: their longest such stretch."""
        out = {}
        for key, gang in self.gangs.items():  # (the property: started gangs retimed first)
            start, length = gang.longest_starved
            if gang.starved_since is not None and now - gang.starved_since > length:
                start, length = gang.starved_since, now - gang.starved_since
            if length > longer_than:
                out[key] = {"since": start, "for_s": length, "running": len(gang.running), "needs": gang.needs}
        return out

    # --- internals -------------------------------------------------------------------------

    def _current(self, entry: tuple[float, int, str, int]) -> bool:
        gang_key = self.gang_of.get(entry[2])
        pod = self._gangs[gang_key].running.get(entry[2]) if gang_key is not None else None
        return pod is not None and pod.token == entry[3]

    def _advance(self, gang: Gang, now: float) -> None:
        """Account the work done since the gang's rates last changed."""
        if gang.progressing and now > gang.since:
            for pod in gang.running.values():
                if pod.remaining is not None:
                    pod.remaining = max(0.0, pod.remaining - (now - gang.since) / self._factor(gang, pod))
        gang.since = now

    def _retime(self, gang: Gang, now: float) -> None:
        running = len(gang.running)
        gang.progressing = running > 0 and running + len(gang.succeeded) >= gang.needs
        gang.spanning = len({pod.node for pod in gang.running.values()}) > 1
        if gang.progressing and gang.first_progress is None:
            gang.first_progress = now
        self._track_starving(gang, starving=running > 0 and not gang.progressing, now=now)
        for pod in gang.running.values():
            pod.token = next(self._seq)  # unique, so a pod re-created under the same name is not confused
            if gang.progressing and pod.remaining is not None:
                due = now + pod.remaining * self._factor(gang, pod)
                heapq.heappush(self._heap, (due, pod.token, pod.key, pod.token))

    @staticmethod
    def _track_starving(gang: Gang, starving: bool, now: float) -> None:
        if starving and gang.starved_since is None:
            gang.starved_since = now
        elif not starving and gang.starved_since is not None:
            length = now - gang.starved_since
            if length > gang.longest_starved[1]:
                gang.longest_starved = (gang.starved_since, length)
            gang.starved_since = None

    @staticmethod
    def _factor(gang: Gang, pod: RunningPod) -> float:
        return pod.slowdown if gang.spanning else 1.0
