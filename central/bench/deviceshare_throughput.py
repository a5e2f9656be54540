"""Session throughput with deviceshare on GPU pods, on the core benchmark's cluster.

The cluster and jobs of `caldera bench` (central.bench.session), with GPUs in Volcano's gpushare
resources: GPU nodes expose `volcano.sh/gpu-number` and `volcano.sh/gpu-memory` (16000 MiB a
card); GPU pods of even-numbered jobs ask one whole card, of odd-numbered jobs 8000 MiB of
one card. Each size runs on fresh caches with the benchmark's configuration as is and with
deviceshare (sharing and whole cards, fragmentation-aware, ScheduleWeight 1) added, the two
alternating twice so that machine noise shows instead of passing for a difference.

    python3 -m central.bench.deviceshare_throughput [NODESxPODS ...]   (default 1000x10000)
"""

from __future__ import annotations

import sys
import time
from typing import Any

from central.bench.session import BENCH_CONF, cluster_size
from central.bench.synthetic import synthetic_cluster
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

DEVICESHARE = ("  - {name: deviceshare, arguments: {deviceshare.GPUSharingEnable: true,"
               " deviceshare.GPUNumberEnable: true, deviceshare.SchedulePolicy: fragmentation-aware,"
               " deviceshare.ScheduleWeight: 1}}\n")


def gpushare(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for obj in objects:
        if obj["kind"] == "Node":
            alloc = obj["status"]["allocatable"]
            cards = int(alloc.pop("nvidia.com/gpu", 0))
            if cards:
                alloc.update({"volcano.sh/gpu-number": str(cards), "volcano.sh/gpu-memory": str(cards * 16000)})
        elif obj["kind"] == "Pod":
            requests = obj["spec"]["containers"][0]["resources"]["requests"]
            if requests.pop("nvidia.com/gpu", None):
                job = int(obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"].split("-")[1])
                requests.update({"volcano.sh/gpu-number": "1"} if job % 2 == 0 else {"volcano.sh/gpu-memory": "8000"})
    return objects


def measure(nodes: int, pods: int, conf_text: str) -> tuple[int, float, float]:
    cache = ClusterCache()
    for obj in gpushare(synthetic_cluster(nodes, pods)):
        cache.apply(obj)
    started = time.perf_counter()
    result = run_cycle(cache, load_config(conf_text, "bench configuration"))
    seconds = time.perf_counter() - started
    return len(result.binds), result.timings["allocate"], seconds


def main(sizes: list[str]) -> int:
    for size in sizes or ["1000x10000"]:
        nodes, pods = cluster_size(size)
        print(f"{nodes:,} nodes / {pods:,} pending pods, GPU pods on gpushare resources")
        for label, conf in 2 * (("bench config", BENCH_CONF), ("+ deviceshare", BENCH_CONF + DEVICESHARE)):
            placed, allocate, session = measure(nodes, pods, conf)
            print(f"  {label:<14} placed {placed:,}; allocate {placed / allocate:,.0f} pods/s; "
                  f"session {placed / session:,.0f} pods/s ({session:.2f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
