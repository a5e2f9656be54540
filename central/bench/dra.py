"""`caldera bench --dra` (or `python3 -m central.bench.dra [NODESxPODS ...]`): scheduling pods
with DRA ResourceClaims.

Throughput: nodes of 96 CPUs with 8 GPUs each, published as one ResourceSlice per node by a
simulated driver (a DeviceClass with a CEL selector), and pods in gangs of 1 to 8, each pod
with its own one-GPU ResourceClaim. The same cluster and pods are scheduled twice in one run:
with the predicates plugin's DRA toggle off (claims ignored, pods placed on CPU and memory) and
on (every claim allocated); pods/s of the allocate action and of the whole session for each.

NUMA: nodes with two NUMA nodes of 16 CPUs, 4 GPUs on each, and an agent report in which part
of one NUMA node's CPUs are held; Guaranteed pods with the single-numa-node policy and a GPU
claim. Printed: how many placed pods got a GPU on another NUMA node than their CPUs, with
numa-aware's device preference and without it.
"""

from __future__ import annotations

import random
import time
from datetime import datetime, timezone
from typing import Any

from central.framework.action import ActionHandle
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.nodedata import NodeData, NumaCell
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

DRIVER = "gpu.sim.caldera.sh"
GPUS_PER_NODE = 8
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: %s}},
            {name: proportion}, {name: nodeorder}, {name: binpack}]
"""
NUMA_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: true,
                                            predicate.DRANUMAPreferenceEnable: %s}},
            {name: numa-aware}, {name: nodeorder}]
"""


def _dra(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


def gpu_class() -> dict[str, Any]:
    return _dra("DeviceClass", {"name": "gpu"},
                {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}" && '
                                                      f'device.attributes["{DRIVER}"].type == "gpu"'}}]})


def gpu_slice(node: str, gpus: int) -> dict[str, Any]:
    half = gpus // 2
    devices = [{"name": f"gpu-{g}", "attributes": {"type": {"string": "gpu"}, "numa": {"int": g // half},
                                                  "pcieRoot": {"string": f"pci{g // 2}"}},
                "capacity": {"memory": {"value": "80Gi"}}} for g in range(gpus)]
    return _dra("ResourceSlice", {"name": f"{node}-gpus"},
                {"driver": DRIVER, "nodeName": node, "pool": {"name": node}, "devices": devices})


def gpu_claim(namespace: str, name: str) -> dict[str, Any]:
    return _dra("ResourceClaim", {"namespace": namespace, "name": name},
                {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}})


def claim_pod(namespace: str, name: str, group: str, requests: dict[str, str],
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox", "resources": {"requests": requests}}
    if annotations:  # Guaranteed: limits equal requests
        container["resources"]["limits"] = requests
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": namespace,
        "annotations": {"scheduling.k8s.io/group-name": group, **(annotations or {})}},
        "spec": {"schedulerName": "volcano", "containers": [container],
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": name}]},
        "status": {"phase": "Pending"}}


def dra_cluster(nodes: int, pods: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}},
                                     gpu_class()]
    for i in range(nodes):
        name = f"node-{i:05d}"
        objects.append({"kind": "Node", "metadata": {"name": name},
                        "status": {"allocatable": {"cpu": "96", "memory": "768Gi", "pods": "110"}}})
        objects.append(gpu_slice(name, GPUS_PER_NODE))
    made, job = 0, 0
    while made < pods:
        size = min(pods - made, rng.choice([1, 2, 4, 8]))
        group = f"job-{job:05d}"
        objects.append({"kind": "PodGroup", "metadata": {"name": group, "namespace": "bench"},
                        "spec": {"minMember": size, "queue": "default"}, "status": {"phase": "Pending"}})
        for t in range(size):
            objects.append(gpu_claim("bench", f"{group}-{t}"))
            objects.append(claim_pod("bench", f"{group}-{t}", group, {"cpu": "4", "memory": "16Gi"}))
        made += size
        job += 1
    return objects


def measure(objects: list[dict[str, Any]], dra_on: bool) -> dict[str, float]:
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    started = time.perf_counter()
    result = run_cycle(cache, load_config(CONF % ("true" if dra_on else "false"), "bench configuration"))
    seconds = time.perf_counter() - started
    placed = len(result.binds)
    return {"placed": placed, "allocate_pods_per_s": placed / result.timings["allocate"],
            "session_pods_per_s": placed / seconds, "session_s": seconds}


def run_throughput(nodes: int, pods: int) -> str:
    objects = dra_cluster(nodes, pods)
    lines = [f"{nodes:,} nodes x {GPUS_PER_NODE} GPUs as ResourceSlices / {pods:,} pending pods, "
             "one GPU ResourceClaim each"]
    for label, on in (("DRA off (claims ignored)", False), ("DRA on", True)):
        row = measure(objects, on)
        lines.append(f"  {label:25s} placed {row['placed']:,}; allocate {row['allocate_pods_per_s']:,.0f} pods/s, "
                     f"session {row['session_pods_per_s']:,.0f} pods/s ({row['session_s']:.1f} s)")
    return "\n".join(lines)


def numa_cluster(nodes: int, pods: int, now: datetime, seed: int = 3) -> ClusterCache:
    """Two NUMA nodes of 16 CPUs and 4 GPUs each per node; on each node one NUMA node (chosen at
    random) has only 4 CPUs free, so single-numa-node pods asking 8 CPUs land on the other."""
    rng = random.Random(seed)
    cache = ClusterCache()
    objects: list[dict[str, Any]] = [{"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}},
                                     gpu_class()]
    busy: list[int] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        objects.append({"kind": "Node", "metadata": {"name": name},
                        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}}})
        objects.append(gpu_slice(name, 8))
        busy.append(rng.randrange(2))
    for p in range(pods):
        group = f"job-{p:05d}"
        objects.append({"kind": "PodGroup", "metadata": {"name": group, "namespace": "bench"},
                        "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Pending"}})
        objects.append(gpu_claim("bench", group))
        objects.append(claim_pod("bench", group, group, {"cpu": "8", "memory": "16Gi"},
                                 {"volcano.sh/numa-topology-policy": "single-numa-node"}))
    for obj in objects:
        cache.apply(obj)
    for i, cell_busy in enumerate(busy):
        cells = []
        for cell in (0, 1):
            cpus = frozenset(range(16 * cell, 16 * cell + 16))
            free = frozenset(range(16 * cell, 16 * cell + 4)) if cell == cell_busy else cpus
            cells.append(NumaCell(cell, cpus, free, 128 * 2**30, 128 * 2**30))
        cache.set_node_data(NodeData(f"node-{i:05d}", now, "static", "single-numa-node", tuple(cells)))
    return cache


def cross_numa(nodes: int, pods: int, prefer: bool) -> tuple[int, int]:
    """(placed pods, those whose GPU is on another NUMA node than their CPUs)."""
    now = datetime.now(timezone.utc)
    cache = numa_cluster(nodes, pods, now)
    conf = load_config(NUMA_CONF % ("true" if prefer else "false"), "bench configuration")
    ssn = Session(cache, conf, now)
    handle = ActionHandle(ssn)
    for name in conf.actions:
        conf.registry.actions[name](conf.action_settings(name)).execute(handle)
    predicates = next(p for tier in ssn.tiers for p in tier if p.name == "predicates")
    devices = {d.id: d for s in cache.dra.slices.values() for d in s.devices}
    placed = crossed = 0
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.node is None:
                continue
            placed += 1
            cells = {int(c) for c in (ssn.handle.annotation(task, "caldera.sh/numa-nodes") or "").split(",") if c}
            for _, results in predicates.devices.allocation_of(task).values():  # type: ignore[attr-defined]
                if any(devices[r.device].attributes.get(f"{DRIVER}/numa") not in cells for r in results):
                    crossed += 1
    ssn.close()
    return placed, crossed


def run_numa(nodes: int, pods: int) -> str:
    lines = [f"{nodes:,} nodes (2 NUMA nodes x 16 CPUs, 4 GPUs each) / {pods:,} single-numa-node pods with a GPU claim"]
    for label, prefer in (("without the NUMA preference", False), ("with numa-aware's preference", True)):
        placed, crossed = cross_numa(nodes, pods, prefer)
        lines.append(f"  {label:29s} placed {placed:,}; GPU on another NUMA node than the CPUs: {crossed:,}"
                     f" ({100 * crossed / max(placed, 1):.0f}%)")
    return "\n".join(lines)


def main(sizes: list[str]) -> int:
    """`caldera bench --dra` hands its sizes here as NODESxPODS, as the command line does."""
    for size in sizes or ["1000x10000"]:
        nodes, _, pods = size.partition("x")
        print(run_throughput(int(nodes), int(pods)), flush=True)
    print(run_numa(200, 300), flush=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
