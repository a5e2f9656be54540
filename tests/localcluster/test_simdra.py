"""The simulated DRA driver of `caldera up`: its slices and classes are what the scheduler's
allocator reads, and the fake prepare step lets a pod start only with its claims allocated to
its node and reserved for it."""

from __future__ import annotations

from typing import Any

from central.kube.client import RESOURCE, path
from central.localcluster.simdra import GPU_CLASS, NIC_CLASS, FakePrepare, device_classes, resource_slice
from central.model.dra import allocate, allocation_status, node_devices, parse_claim, parse_device_class, parse_slice


class Claims:
    """get_or_none over a table of ResourceClaims, as the prepare step asks the API server."""

    def __init__(self, *claims: dict[str, Any]):
        self.by_url = {path(RESOURCE, "resourceclaims", "ns", c["metadata"]["name"]): c for c in claims}

    def get_or_none(self, url: str) -> dict[str, Any] | None:
        return self.by_url.get(url)


def test_the_slice_and_classes_allocate_a_gpu_and_a_nic_on_one_pcie_root() -> None:
    slice_ = parse_slice(resource_slice("gpu-1", gpus=4, nics=2, numa=2))
    assert slice_.fault is None and len(slice_.devices) == 6
    classes = {c.name: c for c in map(parse_device_class, device_classes())}
    claim = parse_claim({"metadata": {"namespace": "ns", "name": "c"}, "spec": {"devices": {
        "requests": [{"name": "g", "exactly": {"deviceClassName": GPU_CLASS}},
                     {"name": "n", "exactly": {"deviceClassName": NIC_CLASS}}],
        "constraints": [{"matchAttribute": "gpu.sim.caldera.sh/pcieRoot"}]}}})
    got = allocate([claim], "gpu-1", node_devices([slice_], "gpu-1"), classes, set())["ns/c"]
    by_request = {r.request: r.device[2] for r in got}
    assert by_request["g"].startswith("gpu-") and by_request["n"].startswith("nic-")
    # device i sits on NUMA node i mod 2: the GPU and the NIC chosen share a root
    assert int(by_request["g"][-1]) % 2 == int(by_request["n"][-1]) % 2


def pod(*refs: dict[str, str], generated: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "p", "uid": "u1"},
            "spec": {"nodeName": "gpu-1", "resourceClaims": list(refs)},
            "status": {"resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in (generated or {}).items()]}}


def claim(name: str, node: str | None = None, reserved: tuple[str, ...] = ()) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if node:
        status["allocation"] = allocation_status(node, [])
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": "p", "uid": uid} for uid in reserved]
    return {"metadata": {"namespace": "ns", "name": name}, "status": status}


def test_a_pod_starts_only_with_each_claim_allocated_to_its_node_and_reserved_for_it() -> None:
    direct = {"name": "gpu", "resourceClaimName": "c"}
    templated = {"name": "gpu", "resourceClaimTemplateName": "t"}
    cases = [
        (Claims(), pod(direct), "resourceclaim c not found"),
        (Claims(), pod(templated), "resourceclaim 'gpu' not created from its template yet"),
        (Claims(claim("c")), pod(direct), "resourceclaim c is not allocated"),
        (Claims(claim("c", "gpu-2", ("u1",))), pod(direct), "resourceclaim c is allocated to another node"),
        (Claims(claim("c", "gpu-1", ("other",))), pod(direct), "resourceclaim c is not reserved for the pod"),
        (Claims(claim("c", "gpu-1", ("other", "u1"))), pod(direct), None),
        (Claims(claim("p-gpu-x", "gpu-1", ("u1",))), pod(templated, generated={"gpu": "p-gpu-x"}), None),
    ]
    for kube, p, why in cases:
        assert FakePrepare(kube).unprepared(p) == why  # type: ignore[arg-type]
