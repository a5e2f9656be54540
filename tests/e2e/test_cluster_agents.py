"""Node agents on the real control plane: each streams its simulated node's report over gRPC
to the scheduler, which publishes batch resources on the Node and places NUMA- and GPU-aware;
the agent then pins the pod's cgroups to the CPUs chosen."""

from __future__ import annotations

import pytest

from tests.builders import container, pod
from tests.e2e.conftest import Tenant, wait_for

pytestmark = pytest.mark.e2e

CPUSET = "caldera.sh/cpuset"
GPU_INDEX = "volcano.sh/gpu-index"


def cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def test_agents_publish_batch_resources_on_their_nodes(tenant: Tenant) -> None:
    def published() -> bool:
        nodes = tenant.kube.get("/api/v1/nodes")["items"]
        return all("kubernetes.io/batch-cpu" in n["status"].get("allocatable", {}) for n in nodes)
    wait_for(published, "kubernetes.io/batch-cpu on every node", timeout=60)


def test_numa_aware_placement_then_the_agent_pins_the_cpus(tenant: Tenant) -> None:
    ns = tenant.namespace
    whole = {"cpu": "6", "memory": "1Gi"}
    db = pod("db", None, containers=[container(requests=whole, limits=whole)],
             annotations={"volcano.sh/numa-topology-policy": "single-numa-node"})
    tenant.create(f"/api/v1/namespaces/{ns}/pods", db)
    placed = wait_for(lambda: (p := tenant.kube.get(f"/api/v1/namespaces/{ns}/pods/db"))["spec"].get("nodeName")
                      and p["status"].get("phase") == "Running" and p, "db bound and running", timeout=60)
    chosen = cpus(placed["metadata"]["annotations"][CPUSET])
    assert len(chosen) == 6 and (chosen <= set(range(8)) or chosen <= set(range(8, 16))), chosen  # one NUMA node
    node, uid = placed["spec"]["nodeName"], placed["metadata"]["uid"]
    cgroup = tenant.cluster.dir / "nodes" / node / "cgroup" / "cpuset" / "kubepods" / f"pod{uid}" / "main" / "cpuset.cpus"
    wait_for(lambda: cgroup.exists() and cpus(cgroup.read_text()) == chosen, "the agent to pin the container", timeout=30)


def test_gpu_share_packs_by_memory_and_whole_cards_stay_whole(tenant: Tenant) -> None:
    ns = tenant.namespace
    for name, extra in (("share-a", {"volcano.sh/gpu-memory": "4000"}), ("share-b", {"volcano.sh/gpu-memory": "4000"})):
        main = container(requests={"cpu": "1", "memory": "1Gi", **extra}, limits=extra)
        tenant.create(f"/api/v1/namespaces/{ns}/pods", pod(name, None, containers=[main]))
    bound = wait_for(lambda: all(p["spec"].get("nodeName") for p in tenant.pods()) and len(tenant.pods()) == 2
                     and tenant.pods(), "both GPU-share pods bound")
    assert {p["spec"]["nodeName"] for p in bound} == {"gpu-1"}
    cards = {p["metadata"]["annotations"][GPU_INDEX] for p in bound}
    assert len(cards) == 1, cards  # packed onto one card by memory
    card = {"volcano.sh/gpu-number": "1"}
    main = container(requests={"cpu": "1", "memory": "1Gi", **card}, limits=card)
    tenant.create(f"/api/v1/namespaces/{ns}/pods", pod("whole", None, containers=[main]))
    whole = wait_for(lambda: (p := tenant.kube.get(f"/api/v1/namespaces/{ns}/pods/whole"))["spec"].get("nodeName") and p,
                     "the whole-card pod bound")
    assert whole["spec"]["nodeName"] == "gpu-1"
    assert whole["metadata"]["annotations"][GPU_INDEX] not in cards
