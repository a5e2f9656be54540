"""`caldera simulate`: what the scheduler would do with a cluster, without a cluster.

    caldera simulate --manifests PATH [--manifests PATH ...] [--config FILE] [--cycles N]
                     [--output json|table] [--node-reports PATH ...] [--now TIME]

Without --manifests it runs on the example cluster shipped with Caldera.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML, load_config
from central.model.cache import ClusterCache
from central.model.fields import parse_time
from central.model.queuetree import check_queues
from central.sim.manifests import load_into, read_manifests, sources_of
from central.sim.report import render_table
from central.sim.simulate import simulate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEFAULT_MANIFESTS = [str(EXAMPLES / "cluster"), str(EXAMPLES / "workloads")]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifests", action="append", metavar="PATH",
                        help="a multi-document YAML file or a directory of them (repeatable); "
                             "default: the shipped example cluster")
    parser.add_argument("--config", metavar="FILE", help="volcano-scheduler.conf (default: Volcano's default)")
    parser.add_argument("--cycles", type=int, default=1, metavar="N", help="scheduling cycles to run (default 1)")
    parser.add_argument("--output", choices=("json", "table"), default="table")
    parser.add_argument("--scheduler-name", default="volcano", help="pods of this scheduler are scheduled")
    parser.add_argument("--node-reports", action="append", metavar="PATH",
                        help="agent reports (the JSON `caldera agent --once --output json` prints), a file "
                             "per node or a directory of them; each is fresh or stale by its own timestamp "
                             "against --now (a report without one is taken as current)")
    parser.add_argument("--now", metavar="TIME", help="the first cycle's time, RFC 3339 (default: now); "
                                                     "matters for waiting times (sla)")


def run(args: argparse.Namespace) -> int:
    if args.cycles < 1:
        raise InputError("--cycles", f"must be at least 1, got {args.cycles}")
    conf = load_config(_read(args.config), args.config) if args.config else load_config(DEFAULT_CONF_YAML, "default configuration")
    paths = args.manifests or DEFAULT_MANIFESTS
    manifests = read_manifests(paths)
    cache = ClusterCache(scheduler_name=args.scheduler_name)
    load_into(cache, manifests)
    check_queues(cache.all_queues(), sources_of(manifests, "Queue"))
    start = parse_time(args.now, "--now") if args.now else datetime.now(timezone.utc)
    if args.node_reports:
        from central.agents.nodedata import read_node_reports  # only dry runs with reports need protobuf

        for data in read_node_reports(args.node_reports):
            # A report's own time decides, against --now, whether it is fresh (a stale one
            # counts as no report, as in the scheduler); one without a time is taken as current.
            cache.set_node_data(data if data.reported_at.timestamp() > 0 else replace(data, reported_at=start))
    result = simulate(cache, conf, args.cycles, start)
    if args.output == "json":
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render_table(result, cache, paths, manifests.skipped))
    return 0


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as err:
        raise InputError(path, f"cannot read: {err.strerror}") from None
