"""`caldera fragmentation`: GPU fragmentation at saturation, per deviceshare policy.

A GPU cluster (half 8-card, half 4-card nodes, 16000 MiB per card) receives a seeded stream
of single-pod jobs: shared pods asking `volcano.sh/gpu-memory` (2000-12000 MiB) and
whole-card pods asking `volcano.sh/gpu-number` (1, 2, 4 or 8 cards). Every step submits new
jobs while fewer than `--backlog` wait, runs one scheduling cycle (allocate with predicates
and deviceshare, ScheduleWeight 1) and lets each running pod finish with probability
`--finish`. The same streams (one per seed) run for every policy. After a warm-up, every step that ends with
a whole-card job still waiting counts its *stranded GPUs*: healthy cards left wholly idle
although whole-card work is pending (idle but unusable: too few of them together on a node).
Printed per policy, over `--seeds` streams: stranded GPUs and the share of cards busy on
average, whole-card jobs and shared pods placed and whole-card jobs still waiting in total.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from central.errors import InputError
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.plugins.deviceshare import POLICIES
from central.plugins.gpucards import GPU_MEMORY, GPU_NUMBER
from central.progress import progress_bar
from central.scheduler import load_config
from central.sim.simulate import simulate

Row = dict[str, Any]  # one run's figures, and the policy's name under "policy"

CARD_MIB = 16000
SHARED_MIB = (2000, 4000, 6000, 8000, 12000)
WHOLE_CARDS = ((1, 0.4), (2, 0.3), (4, 0.2), (8, 0.1))
CONF = """
actions: "allocate"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins: [{{name: predicates}}, {{name: deviceshare, arguments: {{deviceshare.GPUSharingEnable: true,
    deviceshare.GPUNumberEnable: true, deviceshare.SchedulePolicy: {policy}, deviceshare.ScheduleWeight: 1}}}}]
"""
START = datetime(2026, 1, 1, tzinfo=UTC)


def _node(i: int, cards: int) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": f"gpu-{i:03d}"}, "status": {"allocatable": {
        "cpu": "128", "memory": "1Ti", "pods": "110", GPU_NUMBER: str(cards), GPU_MEMORY: str(cards * CARD_MIB)}}}


def _pod(n: int, request: dict[str, str]) -> dict[str, Any]:
    created = (START + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
    requests = {"cpu": "1", "memory": "1Gi", **request}
    return {"kind": "Pod", "metadata": {"name": f"job-{n:05d}", "namespace": "frag", "creationTimestamp": created},
            "spec": {"schedulerName": "volcano",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]},
            "status": {"phase": "Pending"}}


def run_policy(policy: str, nodes: int, steps: int, shared: float, backlog: int, finish: float,
               seed: int) -> Row:
    rng = random.Random(seed)
    cache = ClusterCache()
    for i in range(nodes):
        cache.apply(_node(i, 8 if i % 2 == 0 else 4))
    total_cards = sum(8 if i % 2 == 0 else 4 for i in range(nodes))
    conf = load_config(CONF.format(policy=policy), "fragmentation configuration")
    made, whole_placed, shared_placed, stranded, busy, measured = 0, 0, 0, 0.0, 0.0, 0
    for step in range(steps):
        pending = [t for t in cache.tasks.values() if t.status == TaskStatus.PENDING]
        for _ in range(max(backlog - len(pending), 0)):
            if rng.random() < shared:
                cache.apply(_pod(made, {GPU_MEMORY: str(rng.choice(SHARED_MIB))}))
            else:
                cards = rng.choices([c for c, _ in WHOLE_CARDS], weights=[w for _, w in WHOLE_CARDS])[0]
                cache.apply(_pod(made, {GPU_NUMBER: str(cards)}))
            made += 1
        result = simulate(cache, conf, 1, START + timedelta(minutes=step))
        for pod in result.binds:
            if _asks_whole(cache, pod):
                whole_placed += 1
            else:
                shared_placed += 1
        used_cards = _cards_in_use(cache)
        if step >= steps // 4 and any(_asks_whole(cache, t.uid) for t in cache.tasks.values()
                                      if t.status == TaskStatus.PENDING):
            stranded += total_cards - used_cards
            busy += used_cards / total_cards
            measured += 1
        for task in [t for t in cache.tasks.values() if t.status == TaskStatus.RUNNING]:
            if rng.random() < finish:
                cache.delete("Pod", task.namespace, task.name)
    waiting = sum(1 for t in cache.tasks.values() if t.status == TaskStatus.PENDING and _asks_whole(cache, t.uid))
    return {"policy": policy, "stranded": stranded / max(measured, 1), "busy": busy / max(measured, 1),
            "whole_placed": whole_placed, "shared_placed": shared_placed, "whole_waiting": waiting,
            "cards": total_cards, "nodes": nodes, "measured": measured}


def _asks_whole(cache: ClusterCache, pod: str) -> bool:
    return any(name == GPU_NUMBER for name, _ in cache.tasks[pod].template.resreq)


def _cards_in_use(cache: ClusterCache) -> int:
    """Distinct (node, card) pairs some running pod holds, from their volcano.sh/gpu-index."""
    held = set()
    for task in cache.tasks.values():
        if task.status == TaskStatus.RUNNING and task.node:
            for card in task.annotations.get("volcano.sh/gpu-index", "").split(","):
                if card:
                    held.add((task.node, card))
    return len(held)


def combine(rows: list[Row]) -> Row:
    """Runs of one policy over several seeds: averages of the averages, sums of the counts."""
    out = dict(rows[0])
    for key in ("stranded", "busy"):
        out[key] = sum(r[key] for r in rows) / len(rows)
    for key in ("whole_placed", "shared_placed", "whole_waiting", "measured"):
        out[key] = sum(r[key] for r in rows)
    return out


def report(rows: list[Row], seeds: int) -> str:
    first = rows[0]
    streams = "1 seeded stream" if seeds == 1 else f"{seeds} seeded streams"
    title = (f"{first['cards']} GPUs on {first['nodes']} nodes at saturation, {streams}; "
             f"averages over {first['measured']} steps with whole-card jobs waiting")
    header = (f"  {'policy':<22}{'stranded GPUs':>14}{'cards busy':>12}{'whole-card jobs':>17}{'shared pods':>13}"
              f"{'whole waiting':>15}")
    lines = [title, header]
    for row in rows:
        lines.append(f"  {row['policy']:<22}{row['stranded']:>14.1f}{row['busy']:>11.1%}{row['whole_placed']:>17}"
                     f"{row['shared_placed']:>13}{row['whole_waiting']:>15}")
    summed = "" if seeds == 1 else f", summed over the {seeds} streams"
    lines += ["", "  stranded GPUs    cards wholly idle while a whole-card job waits (idle but unusable: too few free "
                  "together on one node), averaged over those steps; lower is better",
              "  cards busy       share of all cards some pod holds, averaged over the same steps",
              f"  whole-card jobs  jobs asking {GPU_NUMBER} (whole cards) placed over the run{summed}",
              f"  shared pods      pods asking {GPU_MEMORY} (part of a card) placed over the run{summed}",
              f"  whole waiting    whole-card jobs still waiting at the end{summed}"]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=48, help="GPU nodes, half with 8 cards, half with 4 (default 48)")
    parser.add_argument("--steps", type=int, default=120, help="scheduling cycles (default 120)")
    parser.add_argument("--shared", type=float, default=0.6, help="share of jobs that are shared pods (default 0.6)")
    parser.add_argument("--backlog", type=int, default=40,
                        help="jobs kept waiting to saturate the cluster (default 40)")
    parser.add_argument("--finish", type=float, default=0.05, help="chance a running pod ends each step (default 0.05)")
    parser.add_argument("--seeds", type=int, default=4, help="job streams per policy, seeds 1..N (default 4)")
    parser.add_argument("--policy", action="append", choices=POLICIES,
                        help="policies to compare (default: binpack and fragmentation-aware)")


def run(args: argparse.Namespace) -> int:
    for name, value, low, high in (("--shared", args.shared, 0.0, 1.0), ("--finish", args.finish, 0.0, 1.0)):
        if not low <= value <= high:
            raise InputError(name, f"must be between {low:g} and {high:g}, got {value:g}")
    for name, value in (("--nodes", args.nodes), ("--steps", args.steps), ("--backlog", args.backlog),
                        ("--seeds", args.seeds)):
        if value < 1:
            raise InputError(name, f"must be at least 1, got {value}")
    policies = args.policy or ["binpack", "fragmentation-aware"]
    rows = []
    with progress_bar("fragmentation", len(policies) * args.seeds) as step:
        for policy in policies:
            runs = []
            for seed in range(1, args.seeds + 1):
                step(0, f"{policy}, seed {seed}")
                runs.append(run_policy(policy, args.nodes, args.steps, args.shared, args.backlog, args.finish, seed))
                step()
            rows.append(combine(runs))
    print(report(rows, args.seeds))
    return 0
