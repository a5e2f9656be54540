"""Where a scheduling cycle's decisions go.

The scheduling core never talks to Kubernetes. At the end of a cycle it hands its decisions
to a `ClusterSink`: `caldera simulate` records them in memory, the Kubernetes adapter turns
them into pods/binding calls, evictions and status writes. Keys are ``"<namespace>/<name>"``.
"""

from __future__ import annotations

from typing import Any, Protocol

from central.model.dra import DeviceClaimWrite
from central.model.volumes import ClaimBinding


class ClusterSink(Protocol):
    def annotate(self, pod_key: str, annotations: dict[str, str]) -> None:
        """Add annotations a plugin chose for the pod (e.g. volcano.sh/gpu-index, a cpuset).

        Called before `bind` for the same pod, as Volcano's PreBind writes them first."""

    def bind_claims(self, pod_key: str, bindings: tuple[ClaimBinding, ...]) -> None:
        """Bind the pod's unbound claims as chosen (a volume's claimRef, or the node chosen for
        provisioning). Called before `bind` for the same pod; the pod binds only once these
        are written, as kube-scheduler's VolumeBinding PreBind."""

    def reserve_device_claims(self, pod_key: str, writes: tuple[DeviceClaimWrite, ...]) -> None:
        """Allocate (where the cycle allocated them) and reserve the pod's ResourceClaims for it.
        Called before `bind` for the same pod; the pod binds only once these are written, and a
        failed bind takes back what they wrote, as kube-scheduler's DynamicResources PreBind
        and Unreserve."""

    def bind(self, pod_key: str, node: str) -> None:
        """Bind the pod to the node. The cache already charged the node."""

    def nominate(self, pod_key: str, node: str) -> None:
        """Set the pod's status.nominatedNodeName: room is being made for it there."""

    def remove_queue_gate(self, pod_key: str) -> None:
        """Its queue admitted the pod: remove its queue-allocation scheduling gate (best effort,
        off the cycle; see `central.model.schedulinggate`)."""

    def evict(self, pod_key: str, reason: str) -> None:
        """Evict the pod (the Eviction API in a cluster); `reason` is for the pod's condition."""

    def update_podgroup_status(self, podgroup_key: str, status: dict[str, Any]) -> None:
        """Write a PodGroup's `status` (phase, conditions, running, succeeded, failed)."""

    def update_queue_status(self, queue_name: str, status: dict[str, Any]) -> None:
        """Write a Queue's `status` (allocated and the per-phase PodGroup counts)."""

    def annotate_queue(self, queue_name: str, annotations: dict[str, str]) -> None:
        """Add annotations a plugin keeps on the Queue (decayed usage that outlives a restart);
        each plugin limits how often it hands them over."""

    def publish_node_resources(self, node: str, resources: dict[str, str]) -> None:
        """Set extended resources on the Node's status capacity and allocatable
        (kubernetes.io/batch-cpu and -memory for co-location)."""
