"""Turns what the collectors saw into the protobuf NodeReport sections of the contract.

A report is made of independent sections (resources, topology, gpus, pods, qos); the stream
sends all of them at connect and afterwards only those whose bytes changed. Values are rounded
(millicores, KiB) so sampling noise below what the scheduler can use does not count as change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.message import Message

from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.collect.gpu import GpuReport
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.pod_usage import PodUsage
from nodeagent.collect.topology import Topology
from nodeagent.collect.window import Stat

SECTIONS = ("resources", "topology", "gpus", "pods", "qos")


@dataclass
class QosState:
    offline_cpu_quota_cores: float = 0.0
    offline_memory_limit_bytes: int = 0
    no_schedule_taint: bool = False
    evictions_total: int = 0
    dry_run: bool = False


@dataclass
class NodeSnapshot:
    cpu_capacity_cores: float
    cpu_allocatable_cores: float
    memory_allocatable_bytes: int
    usage: NodeUsage
    topology: Topology
    gpus: GpuReport
    pods: list[PodUsage] = field(default_factory=list)
    qos: QosState = field(default_factory=QosState)


def _cores(stat: Stat) -> pb.WindowStat:
    return pb.WindowStat(last=round(stat.last, 3), avg=round(stat.avg, 3), p95=round(stat.p95, 3))


def _bytes(stat: Stat) -> pb.WindowStat:
    return pb.WindowStat(**{k: float(int(v) // 1024 * 1024) for k, v in
                            (("last", stat.last), ("avg", stat.avg), ("p95", stat.p95))})


def sections(snap: NodeSnapshot) -> dict[str, Message]:
    topo = snap.topology
    return {
        "resources": pb.Resources(
            cpu_capacity_cores=snap.cpu_capacity_cores,
            cpu_allocatable_cores=snap.cpu_allocatable_cores,
            cpu_usage_cores=_cores(snap.usage.cpu_cores),
            memory_capacity_bytes=snap.usage.memory_total_bytes,
            memory_allocatable_bytes=snap.memory_allocatable_bytes,
            memory_usage_bytes=_bytes(snap.usage.memory_bytes),
        ),
        "topology": pb.Topology(
            sockets=topo.sockets, cores=topo.cores, threads=topo.threads,
            online_cpus=topo.online_cpus, offline_cpus=topo.offline_cpus,
            numa_nodes=[pb.NumaNode(id=n.id, cpus=n.cpus, memory_total_bytes=n.memory_total_bytes,
                                    memory_free_bytes=n.memory_free_bytes // 1024 * 1024,
                                    distances=n.distances) for n in topo.numa_nodes],
        ),
        "gpus": pb.Gpus(status=snap.gpus.status, gpus=[
            pb.Gpu(index=g.index, uuid=g.uuid, model=g.model, memory_total_bytes=g.memory_total_bytes,
                   memory_used_bytes=g.memory_used_bytes, utilization_ratio=g.utilization_ratio,
                   mig_enabled=g.mig_enabled, numa_node=g.numa_node, healthy=g.healthy, error=g.error,
                   processes=[pb.GpuProcess(pid=p.pid, used_memory_bytes=p.used_memory_bytes,
                                            pod_uid=p.pod_uid) for p in g.processes],
                   mig_devices=[pb.MigDevice(index=m.index, uuid=m.uuid, memory_total_bytes=m.memory_total_bytes,
                                             memory_used_bytes=m.memory_used_bytes) for m in g.mig_devices])
            for g in snap.gpus.gpus
        ]),
        "pods": pb.Pods(pods=[
            pb.PodUsage(namespace=u.pod.namespace, name=u.pod.name, uid=u.pod.uid, qos_level=u.pod.qos_level,
                        cpu_usage_cores=_cores(u.cpu_cores), memory_working_set_bytes=_bytes(u.memory_bytes))
            for u in snap.pods
        ]),
        "qos": pb.QosState(
            offline_cpu_quota_cores=round(snap.qos.offline_cpu_quota_cores, 3),
            offline_memory_limit_bytes=snap.qos.offline_memory_limit_bytes,
            no_schedule_taint=snap.qos.no_schedule_taint,
            evictions_total=snap.qos.evictions_total,
            dry_run=snap.qos.dry_run,
        ),
    }


def full_report(node_name: str, snap: NodeSnapshot) -> pb.NodeReport:
    return pb.NodeReport(node_name=node_name, full=True, **sections(snap))
