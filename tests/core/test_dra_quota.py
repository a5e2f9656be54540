"""Queue quota over ResourceClaims: a queue's `deviceclass/<class>` capability caps the devices
its pods' claims hold, a shared claim counts once, and why-pending names the class with numbers."""

from __future__ import annotations

from typing import Any

from central.model.cache import ClusterCache
from central.model.dra import allocation_status, parse_claim
from central.model.draquota import claim_devices, device_class_quota, over_device_quota
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.testing import RecordingSink
from tests.builders import node, pod, podgroup, queue
from tests.dra_builders import DRIVER, claim, device_class, dra, exactly, gpu, gpu_claim, slice_

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: true}},
            {name: %s}, {name: nodeorder}]
"""


def claimed_pod(name: str, claim_name: str, group: str | None = None) -> dict[str, Any]:
    return pod(name, "ml", group=group or f"pg-{name}",
               resourceClaims=[{"name": "gpu", "resourceClaimName": claim_name}])


def cycle(*objects: dict[str, Any], plugin: str = "capacity", gpus: int = 8) -> tuple[RecordingSink, Any]:
    cache = ClusterCache()
    devices = [gpu(f"gpu-{i}", i % 2) for i in range(gpus)]
    for obj in (node("n1", cpu="64"), dra("DeviceClass", device_class("gpu", "gpu")),
                dra("ResourceSlice", slice_("n1", devices)), *objects):
        cache.apply(obj)
    sink = RecordingSink()
    return sink, run_cycle(cache, load_config(CONF % plugin), sink)


def capped(limit: int, **spec: Any) -> dict[str, Any]:
    return queue("default", weight=1, capability={"deviceclass/gpu": str(limit)}, **spec)


def test_quota_keys_and_claim_demand_as_volcano_counts_them() -> None:
    assert device_class_quota({"cpu": 4000.0, "deviceclass/gpu.nvidia.com": 8000.0, "deviceclass/": 1000.0,
                               "cores.deviceclass/vgpu": 800000.0}) == {"gpu.nvidia.com": 8.0}
    parsed = parse_claim(claim("c", [exactly("a", count=2), exactly("b", "nic"),
                                     exactly("all", allocationMode="All"), exactly("admin", adminAccess=True)]))
    assert claim_devices(parsed) == {"gpu": 2, "nic": 1}


def test_over_device_quota_names_the_class_with_numbers() -> None:
    from collections import Counter

    assert over_device_quota("q", Counter(gpu=3), Counter(gpu=2), {"gpu": 4.0}) == \
        "queue q: deviceclass/gpu: 3 in use + 2 requested > 4 capability"
    assert over_device_quota("q", Counter(gpu=3), Counter(gpu=1, nic=5), {"gpu": 4.0}) is None


def test_a_queue_capped_at_n_gpus_places_only_that_many() -> None:
    pods = [obj for i in range(4) for obj in (gpu_claim(f"c{i}"), podgroup(f"pg-p{i}"), claimed_pod(f"p{i}", f"c{i}"))]
    sink, result = cycle(capped(2), *pods)
    assert len(sink.of("bind")) == 2, result.pending_reasons
    reasons = " ".join(result.pending_reasons.values())
    assert "deviceclass/gpu: 2 in use + 1 requested > 2 capability" in reasons, result.pending_reasons
    sink, _ = cycle(queue("default", weight=1), *pods)
    assert len(sink.of("bind")) == 4


def test_claim_count_and_other_classes_count_against_their_own_limit() -> None:
    sink, result = cycle(capped(3), gpu_claim("c0", count=2), podgroup("pg-p0"), claimed_pod("p0", "c0"),
                         gpu_claim("c1", count=2), podgroup("pg-p1"), claimed_pod("p1", "c1"))
    assert len(sink.of("bind")) == 1, result.pending_reasons
    assert "2 in use + 2 requested > 3" in " ".join(result.pending_reasons.values())


def test_a_shared_claim_counts_once() -> None:
    sink, result = cycle(capped(1), gpu_claim("shared"), podgroup("pg", min_member=3),
                         *(claimed_pod(f"p{i}", "shared", group="pg") for i in range(3)))
    assert len(sink.of("bind")) == 3, result.pending_reasons


def test_claims_allocated_before_the_session_count() -> None:
    held = allocation_status("n1", [])
    held["devices"]["results"] = [{"request": "g", "driver": DRIVER, "pool": "n1", "device": f"gpu-{i}"} for i in range(2)]
    running = pod("old", "ml", group="pg-old", node="n1", phase="Running",
                  resourceClaims=[{"name": "gpu", "resourceClaimName": "held"}])
    sink, result = cycle(capped(2), gpu_claim("held", count=2, status={"allocation": held}),
                         podgroup("pg-old"), running, gpu_claim("c0"), podgroup("pg-p0"), claimed_pod("p0", "c0"))
    assert sink.of("bind") == [], result.pending_reasons
    assert "deviceclass/gpu: 2 in use + 1 requested > 2 capability" in " ".join(result.pending_reasons.values())


def test_enqueue_refuses_a_gang_whose_claims_exceed_the_queue() -> None:
    sink, result = cycle(capped(2), podgroup("pg", min_member=3, minResources={"cpu": "3"}),
                         *(obj for i in range(3) for obj in (gpu_claim(f"c{i}"), claimed_pod(f"p{i}", f"c{i}", group="pg"))))
    assert sink.of("bind") == []
    assert "deviceclass/gpu: 0 in use + 3 requested > 2 capability" in " ".join(result.pending_reasons.values()), \
        result.pending_reasons


def test_hierarchical_parent_cap_binds_its_children() -> None:
    conf_queues = [queue("root", weight=1), queue("team", parent="root", capability={"deviceclass/gpu": "2"}),
                   queue("a", parent="team"), queue("b", parent="team")]
    pods = [obj for i, q in enumerate("aabb") for obj in
            (gpu_claim(f"c{i}"), podgroup(f"pg-p{i}", queue=q), claimed_pod(f"p{i}", f"c{i}"))]
    cache = ClusterCache()
    for obj in (node("n1", cpu="64"), dra("DeviceClass", device_class("gpu", "gpu")),
                dra("ResourceSlice", slice_("n1", [gpu(f"gpu-{i}", 0) for i in range(8)])), *conf_queues, *pods):
        cache.apply(obj)
    conf = (CONF % "capacity").replace("{name: capacity}", "{name: capacity, enableHierarchy: true}")
    sink = RecordingSink()
    result = run_cycle(cache, load_config(conf), sink)
    assert len(sink.of("bind")) == 2, result.pending_reasons


def test_the_toggle_off_leaves_device_keys_inert() -> None:
    pods = [obj for i in range(3) for obj in (gpu_claim(f"c{i}"), podgroup(f"pg-p{i}"), claimed_pod(f"p{i}", f"c{i}"))]
    cache = ClusterCache()
    for obj in (node("n1", cpu="64"), dra("DeviceClass", device_class("gpu", "gpu")),
                dra("ResourceSlice", slice_("n1", [gpu(f"gpu-{i}", 0) for i in range(8)])), capped(1), *pods):
        cache.apply(obj)
    conf = (CONF % "capacity").replace(
        "{name: capacity}", "{name: capacity, arguments: {capacity.DynamicResourceAllocationEnable: false, "
                            "capacity.DRAConsumableCapacityEnable: true}}")
    sink = RecordingSink()
    run_cycle(cache, load_config(conf), sink)
    assert len(sink.of("bind")) == 3


def test_proportion_caps_devices_likewise() -> None:
    pods = [obj for i in range(3) for obj in (gpu_claim(f"c{i}"), podgroup(f"pg-p{i}"), claimed_pod(f"p{i}", f"c{i}"))]
    sink, result = cycle(capped(1), *pods, plugin="proportion")
    assert len(sink.of("bind")) == 1, result.pending_reasons
    assert "deviceclass/gpu: 1 in use + 1 requested > 1 capability" in " ".join(result.pending_reasons.values())
