"""`caldera simulate --until` at scale: a synthetic week on a large cluster. Prints figures only.

    python -m central.bench.simulate_week [--nodes 1000] [--jobs 10000] [--span 168h] [--until 168h] [--seed 1]
                                          [--config FILE]

The workload is `caldera trace generate`'s (central/sim/tracegen.py: mean 10.3 pods a job, so
10,000 jobs make about 100,000 pods); the configuration is Volcano's default, and with
`--config FILE` that file too, on the same workload, its figures (mean wait, mean JCT, CPU
utilisation, each queue's time-averaged share) printed next to the default's. Printed: the
simulated time, wall time, events processed (submissions, pod finishes, controller timers) and
the instants they fell on, scheduling cycles, jobs and pods
submitted and finished, simulated seconds per wall second and the peak resident memory (of the
process, the workload and every configuration's run included). CPU seconds are printed too:
on a shared machine wall time says more about the neighbours than about the simulator.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from central import gctuning
from central.admission.cluster import Cluster
from central.framework.conf import DEFAULT_CONF_YAML, SchedulerConf
from central.model.fields import parse_duration
from central.scheduler import load_config
from central.sim.timed import RunOptions, Workload, admit_job, run_once
from central.sim.trace import job_from_row
from central.sim.tracegen import cluster, generate


def _daily(started: float) -> Callable[[float], None]:
    """Print wall time at every simulated day, so that a run cut short still tells its pace."""
    days = [0]

    def report(now: float) -> None:
        if now >= (days[0] + 1) * 86400:
            days[0] = int(now // 86400)
            print(f"  simulated day {days[0]} done at {time.perf_counter() - started:.0f} s wall", flush=True)

    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--span", default="168h")
    parser.add_argument("--until", default="168h")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--config", type=Path, help="a scheduler configuration to compare with Volcano's default")
    args = parser.parse_args()
    gctuning.for_large_heaps()  # the collector as the scheduler and `caldera simulate` set it
    span = parse_duration(args.span, "--span").total_seconds()
    until = parse_duration(args.until, "--until").total_seconds()
    rows = generate(args.jobs, args.seed, span)
    objects = cluster(args.nodes, args.seed)
    workload = Workload(static=[("bench", o) for o in objects if o["kind"] == "Node"],
                        submitted=[("bench", o) for o in objects if o["kind"] == "Queue"])
    admission = Cluster.from_objects(o for o in objects if o["kind"] == "Queue")
    workload.submitted += [("bench", admit_job(job_from_row(row), admission)) for row in rows]
    pods = sum(t["replicas"] for row in rows for t in row["tasks"])
    options = RunOptions(until=until, period=1.0, stuck_after=600.0, start=datetime(2026, 1, 5, tzinfo=timezone.utc),
                         progress=_daily(time.perf_counter()))
    configs = {"Volcano's default": (DEFAULT_CONF_YAML, "default")}
    if args.config is not None:
        configs[args.config.name] = (args.config.read_text(), str(args.config))
    figures = {}
    for name, (text, source) in configs.items():
        print(f"== {name}")
        figures[name] = run(workload, load_config(text, source), options, args, pods)
    if len(figures) > 1:
        queues = sorted({q for m in figures.values() for q in m.get("queue_share", {})})
        print(f"{'configuration':<20} {'mean wait':>10} {'mean JCT':>10} {'cpu util':>9}  " + " ".join(f"{q:>10}" for q in queues))
        for name, m in figures.items():
            shares = m.get("queue_share", {})
            print(f"{name:<20} {m.get('mean_wait_s', 0) / 60:>9.1f}m {m.get('mean_jct_s', 0) / 60:>9.1f}m "
                  f"{m.get('utilization', {}).get('cpu', 0):>9.3f}  "
                  + " ".join(f"{shares.get(q, {}).get('share', 0):>10.3f}" for q in queues))


def run(workload: Workload, conf: SchedulerConf, options: RunOptions, args: argparse.Namespace, pods: int) -> dict[str, Any]:
    cpu = time.process_time()
    options = replace(options, progress=_daily(time.perf_counter()))
    result = run_once(workload, conf, options)
    cpu = time.process_time() - cpu
    submitted = sum(1 for j in result.jobs.values())
    finished = sum(1 for j in result.jobs.values() if j["finished"] is not None)
    print(f"nodes {args.nodes}, jobs in trace {args.jobs} ({pods} pods), submitted by the end {submitted}, "
          f"finished {finished}")
    print(f"simulated {result.time / 3600:.1f} h in {result.wall_s:.1f} s wall, {cpu:.1f} s CPU "
          f"({result.time / result.wall_s:.0f} simulated s per wall s); "
          f"{result.events} events at {result.instants} instants, {result.cycles} cycles "
          f"({1000 * result.wall_s / max(1, result.cycles):.1f} ms a cycle); "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print("metrics:", {k: v for k, v in result.metrics.items() if k in ("mean_wait_s", "mean_jct_s", "utilization")})
    return result.metrics


if __name__ == "__main__":
    main()
