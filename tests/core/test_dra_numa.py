"""Topology-aware devices: with numa-aware, a pod's claims take devices on the NUMA nodes its
CPUs were given first, and a matchAttribute constraint still keeps a GPU and a NIC together."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from central.bench.dra import NUMA_CONF
from central.framework.action import ActionHandle
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.dra import allocate, device_numa, parse_claim, parse_device_class, parse_slice
from central.model.nodedata import GpuCard, NodeData, NumaCell
from central.scheduler import load_config
from tests.builders import node, pod, podgroup
from tests.dra_builders import claim, device_class, exactly, gpu, nic, slice_

NOW = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)


def dra(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, **obj}


def report(busy_cell: int, gpus: tuple[GpuCard, ...] = ()) -> NodeData:
    """Two NUMA nodes of 8 CPUs; all but one CPU of `busy_cell` held by pinned containers."""
    cells = []
    for cell in (0, 1):
        cpus = frozenset(range(8 * cell, 8 * cell + 8))
        free = frozenset({8 * cell}) if cell == busy_cell else cpus
        cells.append(NumaCell(cell, cpus, free, 32 * 2**30, 32 * 2**30))
    return NodeData("n1", NOW, cpu_manager_policy="static", topology_manager_policy="single-numa-node",
                    numa=tuple(cells), gpus=gpus)


def chosen_devices(requests: list[dict[str, Any]], prefer: bool, busy_cell: int = 0,
                   constraints: list[dict[str, Any]] | None = None, agent_numa: bool = False) -> list[str]:
    cache = ClusterCache()
    obj = claim("c0", requests, constraints)
    obj["metadata"]["namespace"] = "ml"
    guaranteed = {"cpu": "4", "memory": "1Gi"}
    devices = [gpu("gpu-0", 0), gpu("gpu-1", 0), nic("nic-0", 0), gpu("gpu-2", 1, root="pci1a"), gpu("gpu-3", 1),
               nic("nic-1", 1)]
    cards: tuple[GpuCard, ...] = ()
    if agent_numa:  # the slice says nothing of NUMA: the agent's report does, by GPU UUID
        for device in devices:
            numa = device["attributes"].pop("numa")["int"]
            device["attributes"]["uuid"] = {"string": f"GPU-{device['name']}"}
            cards += (GpuCard(len(cards), 0.0, 0.0, True, uuid=f"GPU-{device['name']}", numa=numa),)
    for item in (node("n1", cpu="16"), dra("DeviceClass", device_class("gpu", "gpu")),
                 dra("DeviceClass", device_class("nic", "nic")), dra("ResourceSlice", slice_("n1", devices)),
                 dra("ResourceClaim", obj), podgroup("pg"),
                 pod("p0", "ml", group="pg", requests=guaranteed, limits=guaranteed,
                     annotations={"volcano.sh/numa-topology-policy": "single-numa-node"},
                     resourceClaims=[{"name": "dev", "resourceClaimName": "c0"}])):
        cache.apply(item)
    cache.set_node_data(report(busy_cell, cards))
    conf = load_config(NUMA_CONF % ("true" if prefer else "false"))
    ssn = Session(cache, conf, NOW)
    handle = ActionHandle(ssn)
    for name in conf.actions:
        conf.registry.actions[name](conf.action_settings(name)).execute(handle)
    predicates = next(p for tier in ssn.tiers for p in tier if p.name == "predicates")
    task = ssn.jobs["ml/pg"].tasks["ml/p0"]
    assert task.node == "n1"
    allocation = predicates.devices.allocation_of(task)  # type: ignore[attr-defined]
    ssn.close()
    return [r.device[2] for _, results in allocation.values() for r in results]


def test_claims_take_devices_on_the_numa_node_of_the_pods_cpus() -> None:
    assert chosen_devices([exactly("g")], prefer=True) == ["gpu-2"]
    assert chosen_devices([exactly("g")], prefer=True, busy_cell=1) == ["gpu-0"]


def test_the_agents_report_gives_the_numa_node_of_a_gpu_by_uuid() -> None:
    assert chosen_devices([exactly("g")], prefer=True, agent_numa=True) == ["gpu-2"]
    assert chosen_devices([exactly("g")], prefer=False, agent_numa=True) == ["gpu-0"]


def test_without_the_preference_devices_are_taken_as_listed() -> None:
    assert chosen_devices([exactly("g")], prefer=False) == ["gpu-0"]


def test_match_attribute_keeps_gpu_and_nic_together_on_the_preferred_numa_node() -> None:
    # gpu-2 (NUMA 1) sits on its own PCIe root: the pair must be gpu-3 + nic-1
    got = chosen_devices([exactly("g"), exactly("n", "nic")], prefer=True,
                         constraints=[{"matchAttribute": "gpu.sim.caldera.sh/pcieRoot"}])
    assert got == ["gpu-3", "nic-1"]
    got = chosen_devices([exactly("g"), exactly("n", "nic")], prefer=True,
                         constraints=[{"matchAttribute": "gpu.sim.caldera.sh/numa"}])
    assert got == ["gpu-2", "nic-1"]


def test_preference_only_orders_the_search() -> None:
    devices = list(parse_slice(slice_("n1", [gpu("gpu-0", 0), gpu("gpu-1", 1)])).devices)
    classes = {"gpu": parse_device_class(device_class("gpu", "gpu"))}
    two = parse_claim(claim("c", [exactly("g", count=2)]))
    on_one = allocate([two], "n1", devices, classes, set(), prefer=lambda d: device_numa(d) == 1)
    assert sorted(r.device[2] for r in on_one["ns/c"]) == ["gpu-0", "gpu-1"]
    assert device_numa(devices[1]) == 1
