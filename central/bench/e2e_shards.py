"""`caldera bench --e2e --shards N`: Caldera's scheduler sharded, one shard against N, on the
same nodes and pods as the other e2e rows (`central.bench.e2e`).

Each row is a fresh `caldera up` control plane whose single scheduler is replaced by sharded
replicas (`--scheduler-sharding-mode=hard`), one per shard; the bench writes the NodeShards
itself (nodes dealt out in turn), so no controller process runs beside them. Besides pods/s
and latency, each row prints the CPU seconds its scheduler processes used (user + system,
from /proc), the cost in CPU terms on a machine whose cores the API server shares.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from pathlib import Path

from central.bench.e2e import QPS, Result, Run, caldera_plane, measure
from central.bench.e2e_cases import Workload
from central.bench.e2e_load import populate
from central.controllers.sharding import nodeshard
from central.kube.client import VOLCANO_SHARD, KubeClient, path
from central.localcluster.processes import Process
from central.localcluster.up import Cluster

SCHEDULER = "caldera-scheduler"  # each shard's process is named after it


def _start(cluster: Cluster, shards: int) -> list[Process]:
    assert cluster.runner is not None
    procs = [cluster.runner.start(SCHEDULER, process_name=f"{SCHEDULER}-shard-{i}",
                                  extra=["--scheduler-sharding-mode=hard", f"--scheduler-sharding-name=shard-{i}"])
             for i in range(shards)]
    for proc in procs:
        port = cluster.ports[f"{proc.name}:--listen-port"]
        cluster.sup.wait_ready(proc, lambda port=port: _ready(port), 120)  # type: ignore[misc]
    return procs


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def run_sharded(work: Workload, directory: Path, say: Callable[[str], None], timeout: float, backlog: bool,
                shards: int) -> tuple[Result, float]:
    """One row: (the measured result, the scheduler processes' CPU seconds over it)."""
    run = Run(work, directory, say, timeout, backlog)
    cluster = caldera_plane(run)
    name = f"caldera {shards} shard{'s' if shards > 1 else ''}"
    try:
        cluster.sup.stop("caldera-scheduler")
        admin = KubeClient.connect(str(cluster.kubeconfig), qps=QPS, burst=QPS)
        populate(admin, work, say, name, volcano_api=True)
        for i in range(shards):
            admin.create(path(VOLCANO_SHARD, "nodeshards"),
                         nodeshard(f"shard-{i}", [n.name for n in work.nodes[i::shards]]))
        result = measure(name, admin, cluster.server, run, "volcano", lambda: _start(cluster, shards), cluster.sup,
                         clients="caldera")
        return result, sum(seconds for process, seconds in result.cpu.items() if process.startswith(SCHEDULER))
    finally:
        cluster.sup.stop_all()


def report(row: Result, cpu: float) -> str:
    per = cpu / row.bound * 1000 if row.bound else 0.0
    return f"  {row.scheduler:<15} scheduler CPU {cpu:.1f} s ({per:.2f} s per 1,000 pods bound)"
