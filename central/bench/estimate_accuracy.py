"""How good are the start-time estimates? A generated week, estimated as it runs. Prints figures only.

    python -m central.bench.estimate_accuracy [--nodes 8] [--jobs 700] [--span 168h] [--sample 30m] [--seed 1]

A `caldera trace generate` workload (central/sim/tracegen.py) runs under Volcano's default
configuration in `caldera simulate --until`. Every `--sample` of simulated time, each job
submitted since the last sample and still waiting gets an estimate from the forward run
(`central.scheduler.estimate`) on the simulator's cache at that moment; once the run is over,
the estimate is compared with when the job actually started. Twice: with each job declaring
its runtime (`spec.runningEstimate`, its pods' true duration), and with nothing declared, the
estimator then taking each queue's median of the runtimes seen so far (1 h before any). Printed
per run: jobs estimated, the median and p90 absolute error, and the share estimated to start
within the estimate's horizon that did not.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timedelta, timezone
from statistics import median
from typing import Any

from central.admission.cluster import Cluster
from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.fields import parse_duration
from central.model.jobs import expand_job
from central.model.runtime_estimate import RuntimeHistory
from central.scheduler import load_config
from central.scheduler.estimate import explain, waiting
from central.sim.timed import admit_job
from central.sim.timeline import Timeline
from central.sim.trace import job_from_row
from central.sim.tracegen import cluster, generate

START = datetime(2026, 1, 5, tzinfo=timezone.utc)
HORIZON = 3 * 86400.0
MAX_CYCLES = 3000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=700)
    parser.add_argument("--span", default="168h")
    parser.add_argument("--sample", default="30m")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    span = parse_duration(args.span, "--span").total_seconds()
    sample = parse_duration(args.sample, "--sample").total_seconds()
    for declared in (True, False):
        cpu = time.process_time()
        errors, missed, estimated = run(args.nodes, args.jobs, span, sample, args.seed, declared)
        cpu = time.process_time() - cpu
        label = "runtimes declared" if declared else "runtimes from each queue's history"
        if not errors:
            print(f"{label}: no job waited at a sample ({cpu:.0f} s CPU)")
            continue
        ordered = sorted(errors)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        print(f"{label}: {estimated} jobs estimated at a sample, {len(errors)} started and compared; "
              f"median absolute error {median(errors) / 60:.1f} min, p90 {p90 / 60:.1f} min; "
              f"{missed} started though no start was estimated within {HORIZON / 86400:.0f} days ({cpu:.0f} s CPU)")


def run(nodes: int, jobs: int, span: float, sample: float, seed: int, declared: bool) -> tuple[list[float], int, int]:
    rows = generate(jobs, seed, span)
    if declared:
        for row in rows:
            row["runningEstimate"] = f"{max(t['duration'] for t in row['tasks']):g}s"
    objects = cluster(nodes, seed)
    admission = Cluster.from_objects(o for o in objects if o["kind"] == "Queue")
    cache = ClusterCache()
    conf = load_config(DEFAULT_CONF_YAML, "default")
    for obj in objects:
        if obj["kind"] in ("Node", "Queue"):
            cache.apply(obj)
    timeline = Timeline(cache, conf, START)
    for obj in objects:
        if obj["kind"] == "Queue":
            timeline.submit(obj)
    for row in rows:
        timeline.submit(admit_job(job_from_row(row), admission))
    history = RuntimeHistory()
    estimates: dict[str, float | None] = {}
    seen_done: set[str] = set()
    next_sample = [0.0]

    def at(now: float) -> None:
        if now < next_sample[0]:
            return
        next_sample[0] = now + sample
        if not declared:
            _observe(timeline, history, seen_done)
        targets = [j.uid for j in cache.iter_scheduling_jobs() if waiting(j) and j.uid not in estimates]
        if not targets:
            return
        found = explain(cache, conf, START + timedelta(seconds=now), targets, history=history.copy(), horizon=HORIZON,
                        max_cycles=MAX_CYCLES, pods_of=lambda uid: _pods(timeline, uid))
        for uid, e in found.items():
            estimates[uid] = (e.estimated_start - START).total_seconds() if e.estimated_start else None

    result = timeline.run(span + HORIZON, at)
    errors, missed = [], 0
    for uid, estimate in estimates.items():
        started = (result.jobs.get(uid) or {}).get("started")
        if started is None:
            continue
        if estimate is None:
            missed += 1
        else:
            errors.append(abs(estimate - started))
    return errors, missed, len(estimates)


def _pods(timeline: Timeline, uid: str) -> list[dict[str, Any]]:
    """What the simulated Job controller makes for the job once admitted (its PodGroup is named
    after the job there)."""
    job = timeline.world.jobs.get(uid)
    if job is None:
        return []
    unnamed = {**job, "metadata": {k: v for k, v in job["metadata"].items() if k != "uid"}}
    return expand_job(unnamed)[1]


def _observe(timeline: Timeline, history: RuntimeHistory, seen: set[str]) -> None:
    """Runtimes of the jobs that completed since the last look, per queue."""
    for key, phases in timeline.world.job_phases.items():
        if key in seen or phases[-1][1] != "Completed":
            continue
        seen.add(key)
        running = next((t for t, phase in phases if phase == "Running"), None)
        if running is not None:
            history.observe(timeline.world.queue_of.get(key, "default"), phases[-1][0] - running)


if __name__ == "__main__":
    main()

