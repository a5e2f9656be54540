"""Team b's wait behind team a's backlog, under Volcano's default configuration and with
fairshare (`examples/fairshare/`), over simulated time (the figures are printed, never asserted).

The workload: 4 nodes of 8 CPUs, one queue; team a submits 300 4-CPU, 30-minute jobs at time
0, team b 10 more an hour later. Without a memory of usage, team b waits behind the whole
backlog; fairshare puts the namespace that used less first.

    python -m central.bench.fair_share [--until 30h] [--example DIR]
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from pathlib import Path
from statistics import mean
from typing import Any

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.fields import parse_duration
from central.scheduler import load_config
from central.sim.timed import RunOptions, read_workload, run_once

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fairshare"  # the shipped copy (examples/ links here)
START = datetime(2026, 1, 5, tzinfo=timezone.utc)


def waits_by_namespace(jobs: dict[str, dict[str, Any]]) -> dict[str, list[float]]:
    """Seconds from submission to start, per namespace, of the jobs that started."""
    out: dict[str, list[float]] = {}
    for key, job in jobs.items():
        if job.get("started") is not None:
            out.setdefault(key.split("/", 1)[0], []).append(job["started"] - job["submitted"])
    return out


def run(example: Path, conf_text: str, source: str, until: float) -> dict[str, Any]:
    workload = read_workload([str(example / "cluster.yaml")], [str(example / "two-teams.jsonl")])
    started = time.perf_counter()
    result = run_once(workload, load_config(conf_text, source),
                      RunOptions(until=until, period=1.0, stuck_after=600.0, start=START))
    waits = waits_by_namespace(result.jobs)
    return {"waits": {ns: mean(w) for ns, w in sorted(waits.items())}, "makespan": result.time,
            "cycles": result.cycles, "utilization": result.metrics.get("utilization", {}).get("cpu"),
            "wall_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", default="30h")
    parser.add_argument("--example", type=Path, default=EXAMPLE)
    args = parser.parse_args(argv)
    until = parse_duration(args.until, "--until").total_seconds()
    configs = {"Volcano's default": (DEFAULT_CONF_YAML, "default"),
               "fairshare.conf": ((args.example / "fairshare.conf").read_text(), str(args.example / "fairshare.conf"))}
    print(f"{'configuration':<20} {'team-a wait':>12} {'team-b wait':>12} {'makespan':>9} {'cpu util':>9} {'cycles':>7} {'wall':>7}")
    for name, (text, source) in configs.items():
        figures = run(args.example, text, source, until)
        waits, util = figures["waits"], figures["utilization"]
        print(f"{name:<20} {waits.get('team-a', float('nan')) / 3600:>11.2f}h {waits.get('team-b', float('nan')) / 60:>11.1f}m "
              f"{figures['makespan'] / 3600:>8.1f}h {'' if util is None else f'{util:.2f}':>9} {figures['cycles']:>7} "
              f"{figures['wall_s']:>6.1f}s")


if __name__ == "__main__":
    main()
