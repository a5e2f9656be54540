"""`caldera bench`: how fast a scheduling session is on a large synthetic cluster.

The cluster: nodes of mixed shapes (some with GPUs, some tainted), gang jobs of 1 to 64 pods
across 4 weighted queues, scheduled with Volcano's default configuration plus binpack. The
pods of a job share a template, as the pods of a Volcano task do. Printed per size: pods
placed, pods/s for allocate and for the whole session, session and open times, the open and the
whole cycle once every job has changed and once nothing has, peak RSS, memory per pod, and the
compiled floor (`central.bench.floor`: a greedy placement of the same
pods on the same nodes in C, every node scanned, feasibility and one score), so the
framework's cost shows as a ratio.
"""

from __future__ import annotations

import argparse
import random
import resource
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import numpy as np

from central import gctuning
from central.bench import e2e_cases, floor
from central.bench.e2e_cases import CASE_NAMES as CASES
from central.bench.synthetic import synthetic_cluster
from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.nodedata import NodeData, NumaCell
from central.model.objects import TaskStatus
from central.progress import progress_bar
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

BENCH_CONF = DEFAULT_CONF_YAML + "  - name: binpack\n"
AGENT_CONF = BENCH_CONF + "  - name: usage\n  - name: numa-aware\n"


def floor_baseline(cache: ClusterCache) -> tuple[int, float] | None:
    """Pods placed and seconds for the compiled greedy placement (central.bench.floor) of the
    same pending pods on the same nodes; None where no C compiler is found."""
    if floor.unavailable():
        return None
    n = len(cache.node_list)
    table = cache.table
    pods = [t for t in cache.tasks.values() if t.status == TaskStatus.PENDING]
    requests = np.array([t.resreq for t in pods]).reshape(len(pods), table.idle.shape[1])
    placed, seconds, _ = floor.place(table.idle[:n], table.alloc[:n], table.max_pods[:n] - table.pods[:n], requests)
    return placed, seconds


def bytes_per_pod(objects: list[dict[str, Any]], sample: int = 10_000) -> float:
    """Memory the cache holds per pod, traced on a load of the nodes and `sample` pods."""
    pods = [o for o in objects if o["kind"] == "Pod"][:sample]
    others = [o for o in objects if o["kind"] != "Pod"]
    cache = ClusterCache()
    for obj in others:
        cache.apply(obj)
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for obj in pods:
        cache.apply(obj)
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (after - before) / max(len(pods), 1)


def synthetic_reports(cache: ClusterCache, now: datetime, seed: int = 5) -> None:
    """An agent report per node: two NUMA cells, a kubelet that pins, some measured load."""
    rng = random.Random(seed)
    for node in cache.node_list:
        cpus = int(node.allocatable["cpu"] // 1000)
        half = max(1, cpus // 2)
        cells = tuple(NumaCell(i, frozenset(range(i * half, (i + 1) * half)), frozenset(range(i * half, (i + 1) * half)),
                               node.allocatable["memory"] / 2, node.allocatable["memory"] / 2) for i in range(2))
        cache.set_node_data(NodeData(node.name, now, "static", "single-numa-node", cells,
                                     cpu_usage=rng.uniform(0.05, 0.5) * node.allocatable["cpu"],
                                     memory_usage=rng.uniform(0.05, 0.5) * node.allocatable["memory"]))


def run_size(nodes: int, pods: int, agent_plugins: bool = False, case: str = CASES[0]) -> dict[str, Any]:
    objects = synthetic_cluster(nodes, pods) if case == CASES[0] else e2e_cases.objects(e2e_cases.workload(nodes, pods, case))
    per_pod = bytes_per_pod(objects)
    started = time.perf_counter()
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    load_seconds = time.perf_counter() - started
    del objects
    baseline = floor_baseline(cache)
    conf = load_config(AGENT_CONF if agent_plugins else BENCH_CONF, "bench configuration")
    now = datetime.now(timezone.utc)
    if agent_plugins:
        synthetic_reports(cache, now)
    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_cycle(cache, conf, now=now)
    session_seconds, session_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    placed = len(result.binds)
    for task in list(cache.starting.values()):  # the kubelets start what was bound
        cache.set_status(task, TaskStatus.RUNNING, task.node)
    changed = run_cycle(cache, conf, now=now)  # every job changed since the last open (its pods started)
    again = run_cycle(cache, conf, now=now)  # nothing changed: what does opening cost now?
    return {
        "nodes": nodes, "pods": pods, "placed": placed, "plugins": " + usage, numa-aware" if agent_plugins else "",
        "case": "" if case == CASES[0] else f", Volcano's {case} case",
        "allocate_pods_per_s": placed / result.timings["allocate"],
        "session_pods_per_s": placed / session_seconds,
        "session_cpu_pods_per_s": placed / session_cpu,
        "session_s": session_seconds, "open_ms": result.timings["open"] * 1e3,
        "open_changed_ms": changed.timings["open"] * 1e3, "open_unchanged_ms": again.timings["open"] * 1e3,
        "cycle_changed_ms": sum(changed.timings.values()) * 1e3, "cycle_unchanged_ms": sum(again.timings.values()) * 1e3,
        "enqueue_ms": result.timings["enqueue"] * 1e3, "close_ms": result.timings["close"] * 1e3,
        "cache_load_events_per_s": (nodes + pods) / load_seconds,
        "bytes_per_pod": per_pod,
        "floor_placed": baseline[0] if baseline else None,
        "floor_pods_per_s": baseline[0] / baseline[1] if baseline else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
"""


def run_preemption(nodes: int, pods: int) -> dict[str, float]:
    """A full cluster of elastic low-priority gangs (minMember half their size), then 10%
    more pods as higher-priority gangs that must preempt or reclaim to run."""
    cache = ClusterCache()
    for obj in [{"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}, *synthetic_cluster(nodes, pods)]:
        if obj["kind"] == "PodGroup":
            obj["spec"]["minMember"] = max(1, obj["spec"]["minMember"] // 2)
        cache.apply(obj)
    conf = load_config(PREEMPT_CONF, "bench configuration")
    run_cycle(cache, conf)
    for task in cache.tasks.values():
        if task.status == TaskStatus.BINDING:
            cache.set_status(task, TaskStatus.RUNNING, task.node)
    running = sum(1 for t in cache.tasks.values() if t.status == TaskStatus.RUNNING)
    for obj in synthetic_cluster(0, pods // 10, seed=11):
        if obj["kind"] == "PodGroup":
            obj["metadata"]["name"] = "hi-" + obj["metadata"]["name"]
            obj["spec"]["priorityClassName"] = "high"
            obj["status"]["phase"] = "Inqueue"
        elif obj["kind"] == "Pod":
            obj["metadata"]["name"] = "hi-" + obj["metadata"]["name"]
            group = obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "hi-" + group
        cache.apply(obj)
    started = time.perf_counter()
    result = run_cycle(cache, conf)
    return {"nodes": nodes, "running": running, "starving": pods // 10, "session_s": time.perf_counter() - started,
            "preempt_s": result.timings["preempt"], "reclaim_s": result.timings["reclaim"],
            "evictions": len(result.evictions), "pipelined": len(result.pipelined), "binds": len(result.binds)}


def report_preemption(row: dict[str, float]) -> str:
    return "\n".join([
        f"{row['nodes']:,} nodes, {row['running']:,} running low-priority pods, "
        f"{row['starving']:,} pending high-priority pods in gangs (preempt + reclaim enabled)",
        f"  preempt action:       {row['preempt_s'] * 1e3:,.0f} ms   reclaim action: {row['reclaim_s'] * 1e3:,.0f} ms   "
        f"whole session: {row['session_s']:.2f} s",
        f"  evictions:            {row['evictions']:,}; preemptors pipelined {row['pipelined']:,}, bound {row['binds']:,}",
    ])


def report(row: dict[str, Any]) -> str:
    if row["floor_pods_per_s"] is None or not row["session_cpu_pods_per_s"]:
        why = floor.unavailable() or "nothing placed"
        floor_line = f"  compiled floor:       not measured ({why})"
        floor_placed = ""
    else:
        floor_line = (f"  compiled floor:       {row['floor_pods_per_s']:,.0f} pods/s of CPU time  (the session's "
                      f"{row['session_cpu_pods_per_s']:,.0f} pods/s of CPU time is 1/"
                      f"{row['floor_pods_per_s'] / row['session_cpu_pods_per_s']:,.0f} of it)")
        floor_placed = f" (the floor places {row['floor_placed']:,})"
    return "\n".join([
        f"{row['nodes']:,} nodes / {row['pods']:,} pending pods (default config + binpack{row['plugins']}{row['case']})",
        f"  placed:               {row['placed']:,} pods{floor_placed}",
        f"  allocate action:      {row['allocate_pods_per_s']:,.0f} pods/s",
        f"  whole session:        {row['session_pods_per_s']:,.0f} pods/s, {row['session_cpu_pods_per_s']:,.0f} pods/s "
        f"of CPU time  ({row['session_s']:.2f} s; "
        f"open {row['open_ms']:.1f} ms, enqueue {row['enqueue_ms']:.0f} ms, close {row['close_ms']:.0f} ms)",
        f"  open, nothing changed: {row['open_unchanged_ms']:.1f} ms (every job changed: {row['open_changed_ms']:.1f} ms)",
        f"  cycle, nothing changed: {row['cycle_unchanged_ms']:.1f} ms (every job changed: {row['cycle_changed_ms']:.1f} ms)",
        floor_line,
        f"  cache load:           {row['cache_load_events_per_s']:,.0f} objects/s, {row['bytes_per_pod']:,.0f} B per pod",
        f"  peak RSS:             {row['peak_rss_mb']:,.0f} MB",
    ])


# How long each mode runs, for --help: wall times measured on 2 cores shared with other work
# (load ~17: 36 s, 4 m 57 s and 1 m 57 s), so a quiet machine is faster.
RUN_TIMES = (
    "How long it runs (2 busy cores): the default, both sizes then the preemption run, about 8 minutes; "
    "1000x10000 alone about 40 s (add --preemption none), 5000x50000 about 5 minutes, the preemption run "
    "at 1000x15000 about 2 minutes. --e2e first builds kube-apiserver and kube-scheduler from Go modules "
    "(7-12 minutes, once: cached under ~/.cache/caldera), then starts a control plane per scheduler "
    "(Caldera, Volcano where `caldera conformance` has built it, kube-scheduler) and schedules every pod "
    "through each: several minutes per size and case."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = RUN_TIMES
    parser.add_argument("--size", action="append", metavar="NODESxPODS", type=cluster_size,
                        help="cluster sizes to run (repeatable; default: 1000x10000, about 40 s, and 5000x50000, "
                             "about 5 minutes)")
    parser.add_argument("--agent-plugins", action="store_true",
                        help="give every node an agent report and add the usage and numa-aware plugins")
    parser.add_argument("--e2e", action="store_true",
                        help="end to end through a real local API server instead: Caldera's scheduler process, "
                             "then Volcano's (where its build is cached) and kube-scheduler, each on a fresh one, "
                             "same nodes and pods (default size 1000x10000; a one-time build of 7-12 minutes, "
                             "then several minutes per size and case)")
    parser.add_argument("--case", action="append", metavar="NAME", choices=CASES,
                        help="the workload (repeatable): mixed (the session benchmark's cluster, the default) or "
                             "one of Volcano's benchmark cases: " + ", ".join(CASES[1:]) + " (in memory: the same "
                             "objects, loaded into the cache)")
    parser.add_argument("--dra", action="store_true",
                        help="pods with DRA ResourceClaims instead: GPUs published as ResourceSlices (8 per node), "
                             "pods/s with the DRA toggle off and on in the same run (default size 1000x10000), "
                             "then cross-NUMA GPU allocations with and without numa-aware's device preference")
    parser.add_argument("--backlog", action="store_true",
                        help="with --e2e: create every pod first, then start the scheduler; the clock runs from "
                             "its start (the scheduler and its binds alone, not the creates)")
    parser.add_argument("--shards", type=int, default=0, metavar="N",
                        help="with --e2e: also run Caldera sharded (--scheduler-sharding-mode=hard), one shard "
                             "and then N, each on a fresh control plane, with the schedulers' CPU seconds")
    parser.add_argument("--preemption", metavar="NODESxPODS", default=cluster_size("1000x15000"),
                        type=lambda text: None if text == "none" else cluster_size(text),
                        help="size of the preemption run: nodes x low-priority pods that fill them, or none "
                             "to skip (default: 1000x15000, about 2 minutes)")


def run(args: argparse.Namespace) -> int:
    if args.e2e:
        return run_e2e(args.size or [(1000, 10000)], args.backlog, args.case or [CASES[0]], args.shards)
    if args.dra:
        from central.bench import dra

        return dra.main([f"{nodes}x{pods}" for nodes, pods in args.size or [(1000, 10000)]])
    gctuning.for_large_heaps()  # the session measured with the collector the scheduler runs with
    sizes = args.size or [(1000, 10000), (5000, 50000)]
    cases = args.case or [CASES[0]]
    runs = len(sizes) * len(cases) + (args.preemption is not None)
    with progress_bar("bench", runs) as step:
        for nodes, pods in sizes:
            for case in cases:
                step(0, f"{nodes:,} nodes x {pods:,} pods" + ("" if case == CASES[0] else f", {case}"))
                print(report(run_size(nodes, pods, args.agent_plugins, case)), flush=True)
                step()
        if args.preemption is not None:
            step(0, f"preemption, {args.preemption[0]:,} nodes")
            print(report_preemption(run_preemption(*args.preemption)), flush=True)
            step()
    return 0


def run_e2e(sizes: list[tuple[int, int]], backlog: bool, cases: list[str], shards: int = 0) -> int:
    import os
    import sys

    from central.bench import e2e, e2e_volcano
    from central.bench.e2e_cases import workload
    from central.kube.client import ApiError
    from central.localcluster import build
    from central.localcluster.processes import StartError

    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    why = build.unavailable([*build.CONTROL_PLANE, "kube-scheduler"])
    if why:
        print(f"caldera bench --e2e: {why}", file=sys.stderr)
        return 2
    schedulers = e2e.SCHEDULERS
    no_volcano = e2e_volcano.unavailable()
    if no_volcano:
        print(f"Volcano is not run: {no_volcano}", flush=True)
        schedulers = tuple(s for s in schedulers if s != "volcano")
    lines = []
    for case in cases:
        for nodes, pods in sizes:
            pods = len(workload(nodes, pods, case).pods)  # a gang case runs whole jobs
            mode = "pods created first, then the scheduler started" if backlog else "pods created while it runs"
            print(f"{case}: {nodes:,} nodes / {pods:,} pods end to end, {mode} (load {os.getloadavg()[0]:.1f}; "
                  "nodes registered by the bench as Ready, no kubelet or KWOK; API requests from each API "
                  "server's audit log, level Metadata, per scheduler client)", flush=True)
            try:
                results = e2e.run_size(nodes, pods, say, schedulers=schedulers, backlog=backlog, case=case)
            except (StartError, build.BuildError, ApiError) as err:
                print(f"caldera bench --e2e: {err}", file=sys.stderr)
                return 2
            for row in results:
                print(e2e.report(row), flush=True)
            if shards:
                sharded = run_shards(nodes, pods, say, backlog, shards, case)
                if sharded is None:
                    return 2
                results += sharded
            lines.append(e2e.final_line(nodes, pods, results, case))
    print("\n".join(lines), flush=True)
    return 0


def run_shards(nodes: int, pods: int, say: Callable[[str], None], backlog: bool, shards: int,
               case: str) -> list[Any] | None:
    """Caldera sharded, one shard then `shards`, each row printed with its schedulers' CPU."""
    import sys
    import tempfile
    from pathlib import Path

    from central.bench import e2e, e2e_shards
    from central.bench.e2e_cases import workload
    from central.kube.client import ApiError
    from central.localcluster import build
    from central.localcluster.processes import StartError

    work = workload(nodes, pods, case)
    rows = []
    with tempfile.TemporaryDirectory(prefix="caldera-e2e-shards-") as tmp:
        for count in sorted({1, shards}):
            try:
                row, cpu = e2e_shards.run_sharded(work, Path(tmp) / f"shards-{count}", say, 1800.0, backlog, count)
            except (StartError, build.BuildError, ApiError) as err:
                print(f"caldera bench --e2e --shards: {err}", file=sys.stderr)
                return None
            print(e2e.report(row), flush=True)
            print(e2e_shards.report(row, cpu), flush=True)
            rows.append(row)
    return rows


def cluster_size(text: str) -> tuple[int, int]:
    """NODESxPODS as (nodes, pods), both at least 1; an argparse `type`, so a bad size is
    refused, naming its flag, before any run starts."""
    nodes, _, pods = text.partition("x")
    if not (nodes.isdigit() and pods.isdigit()) or int(nodes) < 1 or int(pods) < 1:
        raise argparse.ArgumentTypeError(f"expected NODESxPODS with both at least 1, such as 1000x10000, got {text!r}")
    return int(nodes), int(pods)
