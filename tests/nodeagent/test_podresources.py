"""The kubelet's pod-resources socket: a real gRPC server on a Unix socket stands in for the
kubelet, with the kubelet's own wire format (fields the agent does not declare included)."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path
from typing import Any, Iterator

import grpc
import pytest

from nodeagent.api.v1 import podresources_pb2 as pb
from nodeagent.api.v1 import podresources_pb2_grpc as pb_grpc
from nodeagent.collect.kubelet import read_kubelet_cpu_state
from nodeagent.collect.podresources import read_pod_resources
from nodeagent.health import Health

# field 3 of AllocatableResourcesResponse and 4 of ContainerResources: the kubelet's
# ContainerMemory {memory_type: "memory", size: 1024}, which the agent does not declare
MEMORY_FIELD_3 = bytes([0x1A, 0x0B, 0x0A, 0x06]) + b"memory" + bytes([0x10, 0x80, 0x08])
MEMORY_FIELD_4 = bytes([0x22]) + MEMORY_FIELD_3[1:]


def _with_unknown(message: Any, extra: bytes) -> Any:
    parsed = type(message)()
    parsed.ParseFromString(message.SerializeToString() + extra)
    return parsed


class FakeKubelet(pb_grpc.PodResourcesListerServicer):
    def __init__(self, allocatable: list[int], pods: list[pb.PodResources]) -> None:
        self.allocatable, self.pods = allocatable, pods

    def GetAllocatableResources(self, request: Any, context: Any) -> Any:
        return _with_unknown(pb.AllocatableResourcesResponse(cpu_ids=self.allocatable), MEMORY_FIELD_3)

    def List(self, request: Any, context: Any) -> Any:
        return pb.ListPodResourcesResponse(pod_resources=self.pods)


def _container(name: str, cpus: list[int], gpus: list[str] = ()) -> pb.ContainerResources:
    devices = [pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=list(gpus),
                                   topology=pb.TopologyInfo(nodes=[pb.NUMANode(ID=1)]))] if gpus else []
    return _with_unknown(pb.ContainerResources(name=name, cpu_ids=cpus, devices=devices), MEMORY_FIELD_4)


PODS = [
    pb.PodResources(name="trainer", namespace="team-a",
                    containers=[_container("main", [2, 3], ["GPU-1"]), _container("side", [])]),
    pb.PodResources(name="db", namespace="team-b", containers=[_container("main", [6])]),
]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers = []

    def start(kubelet: FakeKubelet) -> Path:
        socket = tmp_path / "pod-resources" / "kubelet.sock"
        socket.parent.mkdir(exist_ok=True)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_PodResourcesListerServicer_to_server(kubelet, server)
        server.add_insecure_port(f"unix://{socket}")
        server.start()
        servers.append(server)
        return socket

    yield start
    for server in servers:
        server.stop(None)


def test_exclusive_cpus_and_devices_per_container(serve) -> None:
    resources = read_pod_resources(serve(FakeKubelet(list(range(1, 8)), PODS)))
    assert resources.cpu_manager_policy == "static"
    assert resources.allocatable_cpus == frozenset(range(1, 8))
    assert resources.exclusive_cpus == {2, 3, 6}
    [gpu] = resources.devices
    assert (gpu.namespace, gpu.pod, gpu.container, gpu.resource, gpu.device_ids, gpu.numa_nodes) == (
        "team-a", "trainer", "main", "nvidia.com/gpu", ("GPU-1",), (1,))


def test_the_shared_pool_is_the_online_cpus_less_the_pinned_ones(serve, tmp_path: Path) -> None:
    socket = serve(FakeKubelet(list(range(1, 8)), PODS))
    health = Health()
    state = read_kubelet_cpu_state(None, health, socket=socket, online_cpus=range(8),
                                   topology_manager_policy="single-numa-node")
    assert (state.cpu_manager_policy, state.topology_manager_policy) == ("static", "single-numa-node")
    assert state.free_cpus(list(range(8))) == [0, 1, 4, 5, 7]
    assert health.error_count() == 0


def test_the_socket_wins_over_the_checkpoint_file(serve, tmp_path: Path) -> None:
    """A mounted kubelet directory still gives the topology policy; the CPUs come from the socket."""
    socket = serve(FakeKubelet([], []))  # the "none" CPU manager policy lists no CPUs
    (tmp_path / "config.yaml").write_text("cpuManagerPolicy: static\ntopologyManagerPolicy: restricted\n")
    (tmp_path / "cpu_manager_state").write_text('{"policyName": "static", "defaultCpuSet": "0"}')
    state = read_kubelet_cpu_state(tmp_path, Health(), socket=socket, online_cpus=range(4))
    assert (state.cpu_manager_policy, state.topology_manager_policy, state.shared_cpus) == ("none", "restricted", None)


def test_a_silent_kubelet_leaves_the_cpus_unknown(tmp_path: Path) -> None:
    socket = tmp_path / "kubelet.sock"
    socket.write_text("")  # there, but nobody listens
    health = Health()
    state = read_kubelet_cpu_state(None, health, socket=socket, online_cpus=range(4))
    assert (state.cpu_manager_policy, state.shared_cpus) == ("", None)
    assert health.failing == {"kubelet": "pod_resources_failed"}


def test_neither_socket_nor_directory_means_unknown(tmp_path: Path) -> None:
    state = read_kubelet_cpu_state(None, Health(), socket=tmp_path / "absent.sock", online_cpus=range(4))
    assert (state.cpu_manager_policy, state.topology_manager_policy, state.shared_cpus) == ("", "", None)
