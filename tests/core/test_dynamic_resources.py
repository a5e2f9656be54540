"""Pods with ResourceClaims in a scheduling cycle: placed only where their claims can be
allocated, gangs all or nothing, and devices of allocated claims taken."""

from __future__ import annotations

from typing import Any

import numpy as np

from central.model.cache import ClusterCache
from central.model.dra import allocation_status, parse_slice
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.testing import RecordingSink
from tests.builders import node, pod, podgroup
from tests.dra_builders import DRIVER, claim, device_class, dra, exactly, gpu, gpu_claim, slice_

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: %s}},
            {name: proportion}, {name: nodeorder}]
"""


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return pod(name, "ml", group="pg", resourceClaims=[{"name": "gpu", "resourceClaimName": claim_name}])


def cycle(*objects: dict[str, Any], enabled: bool = True) -> tuple[RecordingSink, Any]:
    cache = ClusterCache()
    for obj in (node("n1"), node("n2"), dra("DeviceClass", device_class("gpu", "gpu")),
                dra("ResourceSlice", slice_("n2", [gpu("gpu-0", 0), gpu("gpu-1", 1)])), *objects):
        cache.apply(obj)
    sink = RecordingSink()
    result = run_cycle(cache, load_config(CONF % ("true" if enabled else "false")), sink)
    return sink, result


def test_a_gang_goes_where_its_claims_can_be_allocated() -> None:
    sink, _ = cycle(gpu_claim("c0"), gpu_claim("c1"), podgroup("pg", min_member=2),
                    with_claim("p-0", "c0"), with_claim("p-1", "c1"))
    assert sorted(sink.of("bind")) == [("ml/p-0", "n2"), ("ml/p-1", "n2")]


def test_each_bind_carries_its_claim_writes_a_shared_claim_allocated_once() -> None:
    shared = dra("ResourceClaim", {**claim("shared", [exactly("g")]), "metadata": {"name": "shared", "namespace": "ml"}})
    pods = [pod(f"p-{i}", "ml", group="pg", resourceClaims=[{"name": "own", "resourceClaimName": f"c{i}"},
                                                           {"name": "common", "resourceClaimName": "shared"}])
            for i in range(1)]
    pods.append(pod("p-1", "ml", group="pg", resourceClaims=[{"name": "common", "resourceClaimName": "shared"}]))
    sink, _ = cycle(gpu_claim("c0"), shared, podgroup("pg", min_member=2), *pods)
    calls = [c for c in sink.calls if c[0] in ("reserve_device_claims", "bind")]
    writes = {key: value for what, key, value in calls if what == "reserve_device_claims"}
    assert [c[0] for c in calls] == ["reserve_device_claims", "bind"] * 2  # each pod's writes come before its bind
    by_claim = {w.claim: w for w in writes["ml/p-0"]}
    assert set(by_claim) == {"ml/c0", "ml/shared"} and all(w.node == "n2" for w in by_claim.values())
    assert len(by_claim["ml/c0"].results) == 1 and len(by_claim["ml/shared"].results) == 1
    assert by_claim["ml/c0"].results[0].device != by_claim["ml/shared"].results[0].device
    # the second pod of the shared claim carries the same allocation: whichever bind runs first writes it
    assert writes["ml/p-1"] == (by_claim["ml/shared"],)


def test_a_claim_allocated_before_the_session_is_only_reserved() -> None:
    held = allocation_status("n2", [])
    held["devices"]["results"] = [{"request": "g", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]
    sink, _ = cycle(gpu_claim("c0", status={"allocation": held}), podgroup("pg"), with_claim("p-0", "c0"))
    assert sink.of("bind") == [("ml/p-0", "n2")]
    (write,) = dict((k, v) for what, k, v in sink.calls if what == "reserve_device_claims")["ml/p-0"]
    assert (write.claim, write.node, write.results) == ("ml/c0", "n2", ())


def test_a_gang_that_cannot_get_all_its_devices_binds_nothing_and_names_the_claim() -> None:
    sink, result = cycle(*(gpu_claim(f"c{i}") for i in range(3)), podgroup("pg", min_member=3),
                         *(with_claim(f"p-{i}", f"c{i}") for i in range(3)))
    assert sink.of("bind") == [] and sink.of("reserve_device_claims") == []  # nothing written for a discarded gang
    reasons = " ".join(result.pending_reasons.values())
    assert "cannot allocate the pod's resource claims" in reasons and "class gpu" in reasons, result.pending_reasons


def test_devices_of_an_allocated_claim_are_taken_and_a_missing_claim_holds_the_pod() -> None:
    results = parse_slice(slice_("n2", [gpu("gpu-0", 0), gpu("gpu-1", 1)])).devices
    held = allocation_status("n2", [])
    held["devices"]["results"] = [{"request": "g", "driver": DRIVER, "pool": "n2", "device": d.name} for d in results]
    sink, result = cycle(gpu_claim("held", count=2, status={"allocation": held}), gpu_claim("c0"),
                         podgroup("pg"), with_claim("p-0", "c0"))
    assert sink.of("bind") == [], result.pending_reasons
    sink, result = cycle(podgroup("pg"), with_claim("p-0", "nope"))
    assert sink.of("bind") == [] and 'resourceclaim "nope" not found' in " ".join(result.pending_reasons.values())


def test_with_the_toggle_off_claims_are_ignored_as_before() -> None:
    sink, _ = cycle(gpu_claim("c0"), podgroup("pg"), with_claim("p-0", "c0"), enabled=False)
    assert len(sink.of("bind")) == 1


def test_simulate_reads_dra_objects_from_manifests(tmp_path: Any) -> None:
    import yaml

    from central.sim.manifests import load_into, read_manifests

    objects = [dra("DeviceClass", device_class("gpu", "gpu")), dra("ResourceSlice", slice_("n2", [gpu("gpu-0", 0)])),
               gpu_claim("c0"), dra("ResourceClaimTemplate", {"metadata": {"namespace": "ml", "name": "one"}, "spec": {}})]
    path = tmp_path / "dra.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    manifests = read_manifests([str(path)])
    assert manifests.skipped == {}
    cache = ClusterCache()
    load_into(cache, manifests)
    assert set(cache.dra.classes) == {"gpu"} and set(cache.dra.slices) == {"n2-gpus"}
    assert set(cache.dra.claims) == {"ml/c0"} and cache.dra.templates == {"ml/one"}


def test_the_counting_filter_agrees_with_the_allocator() -> None:
    """A pod with one plain request is filtered by counting free devices; the full allocator
    must find the same nodes (devices of allocated claims and of other classes left out)."""
    from central.framework.session import Session
    from tests.dra_builders import nic

    results = [{"request": "g", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]
    held = allocation_status("n2", [])
    held["devices"]["results"] = results
    cache = ClusterCache()
    for obj in (node("n1"), node("n2"), node("n3"), dra("DeviceClass", device_class("gpu", "gpu")),
                dra("ResourceSlice", slice_("n1", [gpu("gpu-0", 0), nic("nic-0", 0)])),
                dra("ResourceSlice", slice_("n2", [gpu("gpu-0", 0), gpu("gpu-1", 1)])),
                dra("ResourceSlice", slice_("n3", [gpu("gpu-0", 0), gpu("gpu-1", 1), gpu("gpu-2", 1)])),
                gpu_claim("held", status={"allocation": held}), gpu_claim("c2", count=2),
                podgroup("pg"), with_claim("p-0", "c2")):
        cache.apply(obj)
    ssn = Session(cache, load_config(CONF % "true"))
    predicates = next(p for tier in ssn.tiers for p in tier if p.name == "predicates")
    allocator = predicates.devices  # type: ignore[attr-defined]
    task = ssn.jobs["ml/pg"].tasks["ml/p-0"]
    rows = np.arange(3)
    assert [str(n) for n in ssn.handle.node_index.label("metadata.name")[rows]] == ["n1", "n2", "n3"]
    counted = allocator.checks(task, rows)[0]
    allocator._single_request = lambda claims: None
    searched = allocator.checks(task, rows)[0]
    assert counted.ok.tolist() == searched.ok.tolist() == [False, False, True]
    assert counted.reason == searched.reason
    ssn.close()
