"""`caldera simulate`: what the scheduler would do with a cluster, without a cluster.

    caldera simulate --manifests PATH [--manifests PATH ...] [--config FILE] [--cycles N]
                     [--output json|table] [--node-reports PATH ...] [--now TIME]
    caldera simulate ... --until DURATION [--period 1s] [--stuck-after 10m]
                     [--config A --config B ...] [--details] [--report FILE.html]

Without --manifests it runs on the example cluster shipped with Caldera. With --until it
runs over simulated time instead of for a number of cycles (central/sim/timed.py).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from central import gctuning
from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML, SchedulerConf
from central.manifests import read_file
from central.model.cache import ClusterCache
from central.model.fields import parse_duration, parse_time
from central.model.nodedata import NodeData
from central.model.queuetree import check_queues
from central.progress import progress_bar
from central.scheduler import load_config
from central.scheduler.estimate import Explanation, describe, explain
from central.sim.manifests import load_into, read_manifests, sources_of
from central.sim.report import DETAIL_ROWS, print_report
from central.sim.simulate import simulate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEFAULT_MANIFESTS = [str(EXAMPLES / "cluster"), str(EXAMPLES / "workloads")]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifests", action="append", metavar="PATH",
                        help="a multi-document YAML file or a directory of them (repeatable); "
                             "default: the shipped example cluster")
    parser.add_argument("--config", metavar="FILE", action="append",
                        help="volcano-scheduler.conf (default: Volcano's default); with --until, repeat it "
                             "to compare configurations on the same workload")
    parser.add_argument("--cycles", type=int, default=1, metavar="N", help="scheduling cycles to run (default 1)")
    parser.add_argument("-o", "--output", choices=("table", "wide", "json"), default="table",
                        help="table: a summary, then details capped at %d rows each; wide: every row; "
                             "json: everything, for scripts (default: table)" % DETAIL_ROWS)
    parser.add_argument("--details", action="store_true",
                        help="with table output, every row of every section; with --until, a table of every job's "
                             "times")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="the summary only, and no progress bar on stderr")
    parser.add_argument("--scheduler-name", default="volcano", help="pods of this scheduler are scheduled")
    parser.add_argument("--node-reports", action="append", metavar="PATH",
                        help="agent reports (the JSON `caldera agent --once --output json` prints), a file "
                             "per node or a directory of them; each is fresh or stale by its own timestamp "
                             "against --now (a report without one is taken as current)")
    parser.add_argument("--now", metavar="TIME", help="the first cycle's time, RFC 3339 (default: now); "
                                                     "matters for waiting times (sla) and tdm windows")
    parser.add_argument("--until", metavar="DURATION",
                        help="run over simulated time up to DURATION (e.g. 2h, 168h): pods run for their "
                             "sim.caldera.sh/duration, jobs complete, metrics are kept")
    parser.add_argument("--period", metavar="DURATION", default="1s", help="schedule period with --until (default 1s)")
    parser.add_argument("--stuck-after", metavar="DURATION", default="10m",
                        help="with --until: a job starved of its peers this long counts as stuck (default 10m)")
    parser.add_argument("--report", metavar="FILE.html", help="with --until: write a page with plots")
    parser.add_argument("--explain", action="append", metavar="NAMESPACE/NAME",
                        help="after the cycles, explain this job (a Volcano Job or PodGroup): its place in its queue, "
                             "why it waits, what would unblock it and its estimated start (repeatable)")
    parser.add_argument("--trace", action="append", metavar="FILE",
                        help="with --until: jobs from a trace (one JSON job a line, `caldera trace`), on top "
                             "of the manifests")


def run(args: argparse.Namespace) -> int:
    gctuning.for_large_heaps()  # a whole cluster in memory, as the scheduler holds it
    if args.until is not None:
        return run_timed(args)
    if args.cycles < 1:
        raise InputError("--cycles", f"must be at least 1, got {args.cycles}")
    if args.output == "json" and (args.details or args.quiet):
        raise InputError("--details" if args.details else "--quiet", "applies to table output, not json")
    for flag, given in (("--report", args.report), ("--trace", args.trace), ("--config", len(args.config or ()) > 1)):
        if given:
            raise InputError(flag, "needs --until (a run over simulated time)")
    start = parse_time(args.now, "--now") if args.now else datetime.now(timezone.utc)
    conf = _conf(args.config[0] if args.config else None)
    paths = args.manifests or DEFAULT_MANIFESTS
    # the bar's total is the cycles; reading a large cluster shows as its own stage first
    with progress_bar("reading manifests", args.cycles, enabled=not args.quiet) as step:
        manifests = read_manifests(paths, args.scheduler_name)
        cache = ClusterCache(scheduler_name=args.scheduler_name)
        load_into(cache, manifests)
        check_queues(cache.all_queues(), sources_of(manifests, "Queue"))
        for data in _node_reports(args):
            # A report's own time decides, against --now, whether it is fresh (a stale one counts
            # as no report, as in the scheduler); one without a time is taken as current.
            cache.set_node_data(data if data.reported_at.timestamp() > 0 else replace(data, reported_at=start))
        step(0, "scheduling")
        result = simulate(cache, conf, args.cycles, start, progress=step)
    explained = _explain(cache, conf, start + timedelta(seconds=args.cycles - 1), args.explain or [])
    if args.output == "json":
        body = result.to_json()
        if explained:
            body["explain"] = {uid: e.to_json() for uid, e in explained.items()}
        print(json.dumps(body, indent=2))
    else:
        print_report(result, cache, paths, manifests.skipped, summary_only=args.quiet,
                     limit=None if args.details or args.output == "wide" else DETAIL_ROWS)
        for e in explained.values():
            print(f"\n{describe(e, start)}")
    return 0


def _explain(cache: ClusterCache, conf: SchedulerConf, now: datetime, names: list[str]) -> dict[str, Explanation]:
    """--explain: each NAMESPACE/NAME as a PodGroup of the manifests (a Volcano Job's is named after it)."""
    uids = []
    for name in names:
        if name.count("/") != 1 or name not in cache.jobs or not cache.jobs[name].has_podgroup:
            raise InputError("--explain", f"{name!r}: no such job in the manifests (give NAMESPACE/NAME)")
        uids.append(name)
    return explain(cache, conf, now, uids) if uids else {}


def run_timed(args: argparse.Namespace) -> int:
    from central.sim import timed

    until = _duration(args.until, "--until", positive=True)
    if args.explain:
        raise InputError("--explain", "explains a job after the cycles of a dry run, not with --until")
    if args.output == "json" and args.details:
        raise InputError("--details", "applies to table output, not json (which has every job)")
    options = timed.RunOptions(
        until=until, period=_duration(args.period, "--period", positive=True),
        stuck_after=_duration(args.stuck_after, "--stuck-after"),
        start=parse_time(args.now, "--now") if args.now else datetime.now(timezone.utc),
        scheduler_name=args.scheduler_name, node_reports=tuple(_node_reports(args)))
    workload = timed.read_workload(args.manifests or DEFAULT_MANIFESTS, args.trace or [], args.scheduler_name)
    configs = args.config or [None]
    names = [timed.config_name(path) for path in configs]
    if len(set(names)) < len(names):
        raise InputError("--config", f"two configurations share a file name: {', '.join(names)}")
    runs = {}
    # one bar over every configuration's simulated time, so nothing is left behind between runs
    with progress_bar("simulating", until * len(configs), enabled=not args.quiet, counted=False) as step:
        for i, (name, path) in enumerate(zip(names, configs)):
            def at(now: float, done: float = i * until, label: str = f"{name}: simulated ") -> None:
                step(0, label + str(timedelta(seconds=int(now))), completed=done + now)

            runs[name] = timed.run_once(workload, _conf(path), replace(options, progress=at))
    timed.print_runs(runs, args.output, details=args.details or args.output == "wide")
    if args.report:
        from central.sim.htmlreport import write_report

        write_report(args.report, runs)
    return 0


def _conf(path: str | None) -> SchedulerConf:
    return load_config(read_file(path), path) if path else load_config(DEFAULT_CONF_YAML, "default configuration")


def _node_reports(args: argparse.Namespace) -> list[NodeData]:
    if not args.node_reports:
        return []
    from central.agents.nodedata import read_node_reports  # only dry runs with reports need protobuf

    return list(read_node_reports(args.node_reports))


def _duration(text: str, flag: str, positive: bool = False) -> float:
    seconds = parse_duration(text, flag).total_seconds()
    if positive and seconds <= 0:
        raise InputError(flag, f"must be longer than 0, got {text!r}")
    return seconds

