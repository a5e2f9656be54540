"""Builders for DRA objects (resource.k8s.io/v1) shared by the DRA tests: a simulated GPU
driver's slices, device classes selecting its GPUs or NICs, and claims."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.sim.caldera.sh"


def gpu(name: str, numa: int, memory: str = "80Gi", root: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"type": {"string": "gpu"}, "numa": {"int": numa}, "pcieRoot": {"string": root or f"pci{numa}"}},
        "capacity": {"memory": {"value": memory}},
    }


def nic(name: str, numa: int) -> dict[str, Any]:
    return {"name": name, "attributes": {"type": {"string": "nic"}, "numa": {"int": numa},
                                          "pcieRoot": {"string": f"pci{numa}"}}}


def slice_(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node}, "devices": devices}}


def device_class(name: str, kind: str) -> dict[str, Any]:
    expr = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "{kind}"'
    return {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expr}}]}}


def claim(name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None,
          status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"namespace": "ns", "name": name},
                           "spec": {"devices": {"requests": requests, "constraints": constraints or []}}}
    if status:
        obj["status"] = status
    return obj


def exactly(name: str, cls: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, **fields}}


NODE = slice_("n1", [gpu("gpu-0", 0), gpu("gpu-1", 0), gpu("gpu-2", 1, "40Gi"), gpu("gpu-3", 1), nic("nic-0", 0), nic("nic-1", 1)])


def dra(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as a resource.k8s.io/v1 object of `kind`."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, **obj}


def gpu_claim(name: str, count: int = 1, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ResourceClaim in namespace ml for `count` devices of class gpu."""
    obj = claim(name, [exactly("g", count=count)], status=status)
    obj["metadata"]["namespace"] = "ml"
    return dra("ResourceClaim", obj)
