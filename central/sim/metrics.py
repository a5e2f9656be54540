"""What `caldera simulate --until` measures: per-job times and time-averaged cluster figures.

- jobs: phase, queue and the times (seconds from the start) a job was submitted, started
  (the first instant its pods made progress: enough of them running, see kubelet.py) and
  finished (reached Completed, Failed, Terminated or Aborted); null when not reached.
- makespan_s: from the first submission to the last finish; mean_wait_s: submitted ->
  started; mean_jct_s / p95_jct_s: submitted -> finished, over finished jobs.
- utilization: per resource, the time average of allocated / allocatable over the run.
- queue_share: per queue, the time average of its dominant share (allocated / allocatable,
  the largest over resources) next to its deserved share: spec.deserved's dominant share
  where the queue sets one, else its weight over the sum of the weights of all queues but root.
- stuck: jobs whose running pods made no progress for longer than --stuck-after because too
  few of their peers ran (the gang deadlock), with the longest such stretch.
"""

from __future__ import annotations

import math
from typing import Any

from central.model.cache import ClusterCache
from central.model.nodetable import column_sums
from central.sim.world import ENDED, World


class Recorder:
    """Integrates the cluster's figures over time; `sample(now)` at every instant."""

    def __init__(self, cache: ClusterCache, world: World):
        self.cache, self.world = cache, world
        self.last = 0.0
        self.alloc: dict[str, float] = {}  # allocatable per resource, as of the last sample
        self.used: dict[str, float] = {}
        self.shares: dict[str, float] = {}
        self.used_integral: dict[str, float] = {}
        self.alloc_integral: dict[str, float] = {}
        self.share_integral: dict[str, float] = {}
        self.timeline: list[tuple[float, dict[str, float], dict[str, float]]] = []  # for plots
        self._summed: tuple[object, int, int] | None = None  # (node table, its mark, rows) the sums are of

    def sample(self, now: float) -> None:
        self._integrate(now)
        table, rows, names = self.cache.table, len(self.cache.node_list), self.cache.dims.names
        if self._summed != (table, table.mark, rows):  # every write to a row moves the mark
            self._summed = (table, table.mark, rows)
            alloc, used = column_sums(table.alloc[:rows]), column_sums(table.used[:rows])
            self.alloc = {n: float(alloc[i]) for i, n in enumerate(names) if alloc[i] > 0}
            self.used = {n: float(used[i]) for i, n in enumerate(names) if alloc[i] > 0}
        self.shares = {q: _dominant(v, self.alloc) for q, v in self.world.queue_alloc.items()}
        utilisation = {n: round(self.used[n] / a, 4) for n, a in self.alloc.items()}
        if not self.timeline or self.timeline[-1][1:] != (utilisation, self.shares):
            self.timeline.append((now, utilisation, dict(self.shares)))

    def _integrate(self, now: float) -> None:
        dt = now - self.last
        if dt > 0 and self.used:
            for name, value in self.used.items():
                self.used_integral[name] = self.used_integral.get(name, 0.0) + value * dt
                self.alloc_integral[name] = self.alloc_integral.get(name, 0.0) + self.alloc[name] * dt
            for queue, share in self.shares.items():
                self.share_integral[queue] = self.share_integral.get(queue, 0.0) + share * dt
        self.last = max(self.last, now)

    def finish(self, end: float) -> None:
        self._integrate(end)
        self.end = end

    # --- results -------------------------------------------------------------------------------

    def jobs(self, submitted: dict[str, float]) -> dict[str, dict[str, Any]]:
        out = {}
        for key, history in sorted(self.world.job_phases.items()):
            gang = self.world.kubelets.gangs.get(key)
            finished = next((t for t, phase in history if phase in ENDED), None)
            out[key] = {"phase": history[-1][1], "queue": self.world.queue_of.get(key, "default"),
                        "submitted": submitted.get(key, history[0][0]),
                        "started": gang.first_progress if gang else None, "finished": finished}
        return out

    def metrics(self, jobs: dict[str, dict[str, Any]], stuck_after: float) -> dict[str, Any]:
        done = [j for j in jobs.values() if j["finished"] is not None]
        jct = sorted(j["finished"] - j["submitted"] for j in done)
        waits = [j["started"] - j["submitted"] for j in jobs.values() if j["started"] is not None]
        span = self.end
        return {
            "makespan_s": _round(max(j["finished"] for j in done) - min(j["submitted"] for j in jobs.values()))
            if done else None,
            "mean_wait_s": _round(sum(waits) / len(waits)) if waits else None,
            "mean_jct_s": _round(sum(jct) / len(jct)) if jct else None,
            "p95_jct_s": _round(jct[max(0, math.ceil(0.95 * len(jct)) - 1)]) if jct else None,
            "utilization": {n: _round(self.used_integral[n] / self.alloc_integral[n])
                            for n in sorted(self.used_integral) if self.alloc_integral.get(n)},
            "queue_share": {q: {"share": _round(self.share_integral.get(q, 0.0) / span) if span else 0.0,
                                "deserved": _round(d)} for q, d in sorted(self.deserved().items())},
            "stuck": {k: {f: _round(v) for f, v in s.items()}
                      for k, s in sorted(self.world.kubelets.starved(self.end, stuck_after).items())},
        }

    def deserved(self) -> dict[str, float]:
        queues = {n: q for n, q in self.cache.all_queues().items() if n != "root"}
        weights = sum(q.weight for q in queues.values()) or 1
        return {n: _dominant(q.deserved, self.alloc) if q.deserved else q.weight / weights for n, q in queues.items()}


def _dominant(amounts: dict[str, float], total: dict[str, float]) -> float:
    return max((v / total[n] for n, v in amounts.items() if total.get(n)), default=0.0)


def _round(value: float) -> float:
    return round(float(value), 4)

