"""CPU time of one scheduling cycle placing gangs by HyperNode, against the same gangs placed
without a network topology, on one cache each (the figures are printed, never asserted).

A fabric of LEAVES tier-1 HyperNodes of NODES_PER_LEAF nodes (32 cpu) under spines of 10
leaves; GANGS gangs of PODS pods (8 cpu) in hard mode, highestTierAllowed 1.

    python -m central.bench.network_topology [--leaves 50] [--nodes-per-leaf 20] [--gangs 100] [--pods 16]
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from typing import Any

from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

CONF = """actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: nodeorder
  - name: network-topology-aware
"""


def fabric(leaves: int, per_leaf: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in range(leaves):
        for i in range(per_leaf):
            out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{r}-{i}"},
                        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}})
        out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": f"leaf-{r}"},
                    "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^n{r}-"}}}]}})
    for s in range(0, leaves, 10):
        members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"leaf-{r}"}}} for r in range(s, min(s + 10, leaves))]
        out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": f"spine-{s // 10}"},
                    "spec": {"tier": 2, "members": members}})
    return out


def gangs(count: int, pods: int, topology: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for j in range(count):
        spec: dict[str, Any] = {"minMember": pods, "queue": "default"}
        if topology:
            spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": f"g{j}", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "spec": spec, "status": {"phase": "Inqueue"}})
        for p in range(pods):
            out.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"g{j}-{p}", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": f"g{j}"}},
                        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": "8", "memory": "8Gi"}}}]},
                        "status": {"phase": "Pending"}})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, default=50)
    parser.add_argument("--nodes-per-leaf", type=int, default=20)
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--pods", type=int, default=16)
    args = parser.parse_args()
    conf = load_config(CONF, "bench")
    print(f"{args.leaves * args.nodes_per_leaf} nodes in {args.leaves} leaves, {args.gangs} gangs of {args.pods} pods")
    for topology in (False, True):
        cache = ClusterCache()
        for obj in fabric(args.leaves, args.nodes_per_leaf) + gangs(args.gangs, args.pods, topology):
            cache.apply(obj)
        started = time.process_time()
        result = run_cycle(cache, conf, now=datetime(2026, 1, 1, 1, tzinfo=timezone.utc))
        cpu = time.process_time() - started
        label = "hard, highestTierAllowed 1" if topology else "no networkTopology"
        print(f"  {label:28} {len(result.binds):6} pods bound  {cpu:6.2f} s CPU  {cpu / max(1, len(result.binds)) * 1e6:7.0f} us/pod")


if __name__ == "__main__":
    main()
