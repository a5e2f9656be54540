"""A simulated DRA driver for `caldera up`'s nodes, standing in for a kubelet DRA plugin.

Driver `gpu.sim.caldera.sh` publishes one ResourceSlice per node with DRA devices: GPUs with a
`memory` capacity and `numa` and `pcieRoot` attributes, and NICs with `numa` and `pcieRoot`
(device i sits on NUMA node i mod the node's NUMA count, PCIe root `pci<numa>`), and installs
a DeviceClass for each kind (`gpu.sim.caldera.sh`, `nic.sim.caldera.sh`), as a driver's chart
would.

`FakePrepare` is the narrow fake of the plugin's NodePrepareResources: a pod's claims count as
prepared when each exists, is allocated to this node and lists the pod in
`status.reservedFor`; no device is touched. Until then the pod does not start, and its
container waits with the reason.
"""

from __future__ import annotations

from typing import Any

from central.kube.client import RESOURCE, ApiError, KubeClient, path

DRIVER = "gpu.sim.caldera.sh"
GPU_MEMORY = "80Gi"
GPU_CLASS = "gpu.sim.caldera.sh"
NIC_CLASS = "nic.sim.caldera.sh"


def device_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
             "spec": {"selectors": [{"cel": {"expression":
                                             f'device.driver == "{DRIVER}" && '
                                             f'device.attributes["{DRIVER}"].type == "{kind}"'}}]}}
            for name, kind in ((GPU_CLASS, "gpu"), (NIC_CLASS, "nic"))]


def resource_slice(node: str, gpus: int, nics: int, numa: int) -> dict[str, Any]:
    def attributes(kind: str, i: int) -> dict[str, Any]:
        cell = i % max(numa, 1)
        return {"type": {"string": kind}, "numa": {"int": cell}, "pcieRoot": {"string": f"pci{cell}"}}

    devices = [{"name": f"gpu-{i}", "attributes": attributes("gpu", i), "capacity": {"memory": {"value": GPU_MEMORY}}}
               for i in range(gpus)]
    devices += [{"name": f"nic-{i}", "attributes": attributes("nic", i)} for i in range(nics)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node, "devices": devices,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}}


def publish(kube: KubeClient, node: str, gpus: int, nics: int, numa: int) -> None:
    """Create the node's slice and the DeviceClasses (both kept if they exist)."""
    for obj, url in [*((c, path(RESOURCE, "deviceclasses")) for c in device_classes()),
                     (resource_slice(node, gpus, nics, numa), path(RESOURCE, "resourceslices"))]:
        try:
            kube.create(url, obj)
        except ApiError as err:
            if err.code != 409:
                raise


def pod_claim_names(pod: dict[str, Any]) -> list[tuple[str, str]]:
    """(entry, claim name or "" while a template's claim is not created yet), per pod claim."""
    generated = {s.get("name"): s.get("resourceClaimName") or ""
                 for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    return [(ref.get("name", ""), ref.get("resourceClaimName") or generated.get(ref.get("name"), ""))
            for ref in pod["spec"].get("resourceClaims") or []]


class FakePrepare:
    """The kubelet plugin's NodePrepareResources, faked: checks, prepares nothing."""

    def __init__(self, kube: KubeClient):
        self.kube = kube

    def unprepared(self, pod: dict[str, Any]) -> str | None:
        """Why the pod's claims are not ready for it, or None."""
        meta, node = pod["metadata"], pod["spec"].get("nodeName")
        for entry, name in pod_claim_names(pod):
            if not name:
                return f"resourceclaim {entry!r} not created from its template yet"
            claim = self.kube.get_or_none(path(RESOURCE, "resourceclaims", meta["namespace"], name))
            if claim is None:
                return f"resourceclaim {name} not found"
            status = claim.get("status") or {}
            allocation = status.get("allocation")
            if not allocation:
                return f"resourceclaim {name} is not allocated"
            if node not in _nodes(allocation):
                return f"resourceclaim {name} is allocated to another node"
            if not any(r.get("uid") == meta.get("uid") for r in status.get("reservedFor") or []):
                return f"resourceclaim {name} is not reserved for the pod"
        return None


def _nodes(allocation: dict[str, Any]) -> set[str]:
    """The nodes an allocation's nodeSelector names by metadata.name (as the scheduler writes it)."""
    return {value for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
            for f in term.get("matchFields") or [] if f.get("key") == "metadata.name"
            for value in f.get("values") or []}
