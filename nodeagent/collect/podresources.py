"""The kubelet's pod-resources socket: which CPUs and devices it assigned to each container.

The socket (/var/lib/kubelet/pod-resources/kubelet.sock) is the kubelet's own local API for
node agents: a gRPC server on a Unix socket, reachable only from the node, that answers from the
kubelet's memory. Reading it replaces reading the CPU manager's checkpoint file, and with it the
need to mount the kubelet's whole directory (its client key, every pod's volumes).

`List` gives each container's exclusive CPUs and devices; `GetAllocatableResources` lists CPUs
only under the static CPU manager policy, which is how the policy is told from the socket.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from nodeagent.api.v1 import podresources_pb2, podresources_pb2_grpc

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # as the kubelet's own clients allow


@dataclass(frozen=True)
class DeviceAssignment:
    namespace: str
    pod: str
    container: str
    resource: str
    device_ids: tuple[str, ...]
    numa_nodes: tuple[int, ...]


@dataclass(frozen=True)
class PodResources:
    allocatable_cpus: frozenset[int]  # empty unless the CPU manager policy is static
    exclusive_cpus: frozenset[int]  # held by a container alone
    devices: tuple[DeviceAssignment, ...]

    @property
    def cpu_manager_policy(self) -> str:
        return "static" if self.allocatable_cpus else "none"


def read_pod_resources(socket: Path, timeout_s: float = 5.0) -> PodResources:
    """Both calls over one channel; raises grpc.RpcError (or OSError) when the kubelet does not answer."""
    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    with grpc.insecure_channel(f"unix://{socket}", options=options) as channel:
        stub = podresources_pb2_grpc.PodResourcesListerStub(channel)
        allocatable = stub.GetAllocatableResources(podresources_pb2.AllocatableResourcesRequest(), timeout=timeout_s)
        listed = stub.List(podresources_pb2.ListPodResourcesRequest(), timeout=timeout_s)
    exclusive: set[int] = set()
    devices: list[DeviceAssignment] = []
    for pod in listed.pod_resources:
        for container in pod.containers:
            exclusive.update(int(c) for c in container.cpu_ids)
            devices.extend(
                DeviceAssignment(pod.namespace, pod.name, container.name, d.resource_name, tuple(d.device_ids),
                                 tuple(int(n.ID) for n in d.topology.nodes))
                for d in container.devices)
    return PodResources(frozenset(int(c) for c in allocatable.cpu_ids), frozenset(exclusive), tuple(devices))
