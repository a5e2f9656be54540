"""The two time-aware workloads (`examples/time-aware/`) under Volcano's default configuration
and `examples/configs/time-aware.conf`, over simulated time (figures printed, never asserted;
tests/sim/test_time_aware_example.py holds the configuration to them).

- starving-gang: 4 nodes of 8 CPUs; a gang of 8 x 4 CPUs at 10 minutes while a 2-CPU,
  20-minute job arrives every 2 minutes for 12 hours. Printed: the gang's wait, the small jobs
  finished, CPU utilisation and the makespan.
- two-teams: team a submits 300 4-CPU, 30-minute jobs at time 0, team b 10 an hour later.
  Printed: each team's mean wait.

    python -m central.bench.time_aware [--until 30h]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from central.bench.fair_share import START, waits_by_namespace
from central.framework.conf import DEFAULT_CONF_YAML
from central.model.fields import parse_duration
from central.scheduler import load_config
from central.sim.timed import RunOptions, read_workload, run_once
from central.sim.timeline import TimedResult

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WORKLOADS = EXAMPLES / "time-aware"
CONF = EXAMPLES / "configs" / "time-aware.conf"


def run(workload: str, conf_text: str, source: str, until: float) -> tuple[TimedResult, float]:
    loaded = read_workload([str(WORKLOADS / "cluster.yaml")], [str(WORKLOADS / workload)])
    started = time.perf_counter()
    result = run_once(loaded, load_config(conf_text, source),
                      RunOptions(until=until, period=1.0, stuck_after=600.0, start=START))
    return result, time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", default="30h")
    args = parser.parse_args(argv)
    until = parse_duration(args.until, "--until").total_seconds()
    configs = {"Volcano's default": (DEFAULT_CONF_YAML, "default"), "time-aware.conf": (CONF.read_text(), str(CONF))}
    print(f"starving-gang: {'configuration':<18} {'gang wait':>10} {'small done':>11} {'cpu util':>9} {'makespan':>9} {'wall':>6}")
    for name, (text, source) in configs.items():
        result, wall = run("starving-gang.jsonl", text, source, until)
        gang = result.jobs["default/gang"]
        wait = "never" if gang["started"] is None else f"{(gang['started'] - gang['submitted']) / 60:.0f}m"
        small = [j for k, j in result.jobs.items() if k != "default/gang"]
        done = sum(1 for j in small if j["finished"] is not None)
        print(f"               {name:<18} {wait:>10} {f'{done}/{len(small)}':>11} "
              f"{result.metrics['utilization']['cpu']:>9.2f} {result.time / 3600:>8.1f}h {wall:>5.0f}s")
    print(f"two-teams:     {'configuration':<18} {'team-a wait':>12} {'team-b wait':>12} {'cpu util':>9} {'wall':>6}")
    for name, (text, source) in configs.items():
        result, wall = run("two-teams.jsonl", text, source, until)
        waits = {ns: sum(w) / len(w) for ns, w in waits_by_namespace(result.jobs).items()}
        print(f"               {name:<18} {waits.get('team-a', float('nan')) / 3600:>11.2f}h "
              f"{waits.get('team-b', float('nan')) / 60:>11.1f}m {result.metrics['utilization']['cpu']:>9.2f} {wall:>5.0f}s")


if __name__ == "__main__":
    main()
