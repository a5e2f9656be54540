"""`caldera trace`: write workload traces for `caldera simulate --until --trace FILE`.

    caldera trace generate --jobs N [--seed S] [--span 168h] [--queues prod=4,batch=2]
                           [--cluster FILE --nodes N]
    caldera trace from-pai --job-table pai_job_table.csv --task-table pai_task_table.csv

Both print the trace (central/sim/trace.py: one JSON job a line) on stdout; the distributions
and the PAI mapping are documented in central/sim/tracegen.py.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import yaml

from central.errors import InputError
from central.model.fields import parse_duration
from central.sim.trace import write_trace
from central.sim.tracegen import DEFAULT_QUEUES, cluster, from_pai, generate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    gen = sub.add_parser("generate", help="a synthetic workload with documented distributions")
    gen.add_argument("--jobs", type=int, required=True, metavar="N", help="jobs to generate")
    gen.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (same seed, same trace)")
    gen.add_argument("--span", default="168h", metavar="DURATION", help="submissions spread over this (default 168h)")
    gen.add_argument("--queues", metavar="NAME=WEIGHT,...",
                     help="queue mix (default " + ",".join(f"{k}={v}" for k, v in DEFAULT_QUEUES.items()) + ")")
    gen.add_argument("--cluster", metavar="FILE", help="also write Nodes and the Queues as manifests to FILE")
    gen.add_argument("--nodes", type=int, default=100, metavar="N", help="nodes in --cluster (default 100)")
    pai = sub.add_parser("from-pai", help="convert the Alibaba PAI GPU trace (cluster-trace-gpu-v2020)")
    pai.add_argument("--job-table", required=True, metavar="CSV", help="pai_job_table.csv (no header)")
    pai.add_argument("--task-table", required=True, metavar="CSV", help="pai_task_table.csv (no header)")


def run(args: argparse.Namespace) -> int:
    if args.action == "generate":
        if args.jobs < 1 or args.nodes < 1:
            raise InputError("--jobs" if args.jobs < 1 else "--nodes", "must be at least 1")
        queues = _queues(args.queues) if args.queues else None
        span = parse_duration(args.span, "--span").total_seconds()
        sys.stdout.write(write_trace(generate(args.jobs, args.seed, span, queues)))
        if args.cluster:
            Path(args.cluster).write_text(yaml.safe_dump_all(cluster(args.nodes, args.seed, queues), sort_keys=False))
        return 0
    rows, left_out = from_pai(_csv(args.job_table), _csv(args.task_table))
    sys.stdout.write(write_trace(rows))
    print(f"caldera trace: {len(rows)} jobs converted, {left_out} left out (no start or end time)", file=sys.stderr)
    return 0


def _queues(text: str) -> dict[str, int]:
    out = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if not name or not weight.isdigit() or int(weight) < 1:
            raise InputError("--queues", f"expected NAME=WEIGHT with a weight >= 1, got {part!r}")
        out[name] = int(weight)
    return out


def _csv(path: str) -> list[list[str]]:
    try:
        with open(path, newline="") as handle:
            return list(csv.reader(handle))
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror}") from None
