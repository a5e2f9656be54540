"""The DRA objects and the structured allocator: selection, counts, All, admin access,
matchAttribute, taken devices, and bad input faulting one object."""

from __future__ import annotations

from typing import Any

import pytest

from central.model.dra import (
    Unallocatable,
    allocate,
    allocation_status,
    node_devices,
    parse_claim,
    parse_device_class,
    parse_slice,
)
from central.model.dracel import SelectorError, compile_selector
from tests.dra_builders import DRIVER, NODE, claim, device_class, exactly, gpu, nic, slice_

CLASSES = {c.name: c for c in (parse_device_class(device_class("gpu", "gpu")), parse_device_class(device_class("nic", "nic")))}


DEVICES = node_devices([parse_slice(NODE)], "n1")


def devices_of(results: dict[str, Any], key: str) -> list[str]:
    return [r.device[2] for r in results[key]]


def test_exact_count_takes_that_many_devices_of_the_class() -> None:
    got = allocate([parse_claim(claim("c", [exactly("g", count=2)]))], "n1", DEVICES, CLASSES, set())
    assert devices_of(got, "ns/c") == ["gpu-0", "gpu-1"]


def test_devices_taken_by_other_claims_are_skipped_and_a_shortfall_says_so() -> None:
    taken = {(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-1"), (DRIVER, "n1", "gpu-2")}
    got = allocate([parse_claim(claim("c", [exactly("g")]))], "n1", DEVICES, CLASSES, taken)
    assert devices_of(got, "ns/c") == ["gpu-3"]
    with pytest.raises(Unallocatable, match=r"ns/c: request g: needs 2 device\(s\) of class gpu, 1 free"):
        allocate([parse_claim(claim("c", [exactly("g", count=2)]))], "n1", DEVICES, CLASSES, taken)


def test_cel_selector_on_capacity_with_quantities() -> None:
    sel = [{"cel": {"expression": f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0'}}]
    got = allocate([parse_claim(claim("c", [exactly("g", count=3, selectors=sel)]))], "n1", DEVICES, CLASSES, set())
    assert devices_of(got, "ns/c") == ["gpu-0", "gpu-1", "gpu-3"]  # gpu-2 has 40Gi


def test_allocation_mode_all_needs_every_matching_device_free() -> None:
    got = allocate([parse_claim(claim("c", [exactly("n", "nic", allocationMode="All")]))], "n1", DEVICES, CLASSES, set())
    assert devices_of(got, "ns/c") == ["nic-0", "nic-1"]
    with pytest.raises(Unallocatable, match="allocationMode All"):
        allocate([parse_claim(claim("c", [exactly("n", "nic", allocationMode="All")]))], "n1", DEVICES, CLASSES,
                 {(DRIVER, "n1", "nic-1")})


def test_admin_access_may_use_taken_devices() -> None:
    taken = {(DRIVER, "n1", f"gpu-{i}") for i in range(4)}
    got = allocate([parse_claim(claim("c", [exactly("g", adminAccess=True)]))], "n1", DEVICES, CLASSES, taken)
    assert got["ns/c"][0].admin_access


def test_match_attribute_backtracks_to_keep_gpu_and_nic_on_one_pcie_root() -> None:
    constraints = [{"matchAttribute": f"{DRIVER}/pcieRoot"}]
    # gpu-0 and gpu-1 are free on pci0 but nic-0 is taken: the pair must come from pci1
    c = parse_claim(claim("c", [exactly("g"), exactly("n", "nic")], constraints))
    got = allocate([c], "n1", DEVICES, CLASSES, {(DRIVER, "n1", "nic-0")})
    assert devices_of(got, "ns/c") == ["gpu-2", "nic-1"]
    with pytest.raises(Unallocatable, match="constraint"):
        allocate([parse_claim(claim("c", [exactly("g", count=3)], constraints))], "n1", DEVICES, CLASSES, set())


def test_claims_of_one_pod_do_not_share_devices_and_taken_is_left_alone() -> None:
    taken: set[tuple[str, str, str]] = set()
    claims = [parse_claim(claim("a", [exactly("g", count=2)])), parse_claim(claim("b", [exactly("g", count=2)]))]
    got = allocate(claims, "n1", DEVICES, CLASSES, taken)
    assert devices_of(got, "ns/a") == ["gpu-0", "gpu-1"] and devices_of(got, "ns/b") == ["gpu-2", "gpu-3"]
    assert taken == set()
    with pytest.raises(Unallocatable):
        allocate(claims + [parse_claim(claim("c", [exactly("g")]))], "n1", DEVICES, CLASSES, taken)


def test_an_allocated_claim_is_kept_on_its_node_and_round_trips() -> None:
    got = allocate([parse_claim(claim("c", [exactly("g")]))], "n1", DEVICES, CLASSES, set())
    status = {"allocation": allocation_status("n1", got["ns/c"])}
    allocated = parse_claim(claim("c", [exactly("g")], status=status))
    assert allocated.allocated_node == "n1" and allocated.results == got["ns/c"]
    assert allocate([allocated], "n1", DEVICES, CLASSES, set()) == {}
    with pytest.raises(Unallocatable, match="another node"):
        allocate([allocated], "n2", [], CLASSES, set())


def test_missing_class_faults_that_claim_only() -> None:
    with pytest.raises(Unallocatable, match="deviceclass 'tpu' not found"):
        allocate([parse_claim(claim("c", [exactly("g", "tpu")]))], "n1", DEVICES, CLASSES, set())


def test_selector_that_does_not_compile_faults_the_object_naming_the_field() -> None:
    bad = [{"cel": {"expression": "device.("}}]
    c = parse_claim(claim("c", [exactly("g", selectors=bad)]))
    assert c.fault and "ResourceClaim ns/c: spec.devices.requests[0].exactly.selectors[0].cel.expression" in c.fault
    with pytest.raises(Unallocatable, match="does not compile"):
        allocate([c], "n1", DEVICES, CLASSES, set())
    klass = parse_device_class({"metadata": {"name": "broken"}, "spec": {"selectors": bad}})
    assert klass.fault and klass.fault.startswith("DeviceClass broken: spec.selectors[0]")
    with pytest.raises(SelectorError):
        compile_selector("device.(")


def test_slice_with_duplicate_devices_publishes_nothing_and_others_still_count() -> None:
    bad = parse_slice(slice_("n1", [gpu("gpu-0", 0), gpu("gpu-0", 1)]))
    assert bad.devices == () and bad.fault and "duplicate device 'gpu-0'" in bad.fault
    good = parse_slice(slice_("n1", [gpu("gpu-9", 0)]))
    got = allocate([parse_claim(claim("c", [exactly("g")]))], "n1", node_devices([bad, good], "n1"), CLASSES, set())
    assert devices_of(got, "ns/c") == ["gpu-9"]


def test_devices_of_other_nodes_are_not_offered_but_all_nodes_slices_are() -> None:
    shared = slice_("x", [nic("nic-shared", 0)])
    del shared["spec"]["nodeName"]
    shared["spec"]["allNodes"] = True
    devices = node_devices([parse_slice(NODE), parse_slice(shared)], "n2")
    assert [d.name for d in devices] == ["nic-shared"]


def test_a_selector_error_at_runtime_is_a_non_match() -> None:
    sel = [{"cel": {"expression": 'device.attributes["other.example.com"].model == "x"'}}]
    with pytest.raises(Unallocatable, match="0 free"):
        allocate([parse_claim(claim("c", [exactly("g", selectors=sel)]))], "n1", DEVICES, CLASSES, set())
