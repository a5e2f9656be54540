"""Turns what the collectors saw into the protobuf NodeReport sections of the contract.

A report is made of independent sections (resources, topology, gpus, pods, qos); the stream
sends all of them at connect and afterwards only those that changed by more than its deadband
(`nodeagent.deadband`). A figure that is unknown is left unset, never sent as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.message import Message

from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.collect.gpu import GpuReport
from nodeagent.collect.kubelet import KubeletCpuState
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.pod_usage import PodUsage
from nodeagent.collect.topology import Topology
from nodeagent.collect.window import Stat
from nodeagent.host.psi import Pressure

SECTIONS = ("resources", "topology", "gpus", "pods", "qos")


@dataclass
class QosState:
    offline_cpu_quota_cores: float = 0.0
    offline_memory_limit_bytes: int = 0
    no_schedule_taint: bool = False
    evictions_total: int = 0
    dry_run: bool = False
    pressures: tuple[str, ...] = ()  # what called for eviction this sample


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
    kubelet: KubeletCpuState = field(default_factory=KubeletCpuState)
    batch_cpu_millicores: int | None = None  # None: usage unknown, nothing offered
    batch_memory_bytes: int | None = None

    @property
    def usage_known(self) -> bool:
        return self.usage.cpu_cores is not None and self.usage.memory_bytes is not None


def _cores(stat: Stat | None) -> pb.WindowStat | None:
    if stat is None:
        return None
    return pb.WindowStat(last=round(stat.last, 3), avg=round(stat.avg, 3), p95=round(stat.p95, 3))


def _bytes(stat: Stat | None) -> pb.WindowStat | None:
    if stat is None:
        return None
    return pb.WindowStat(**{k: float(int(v) // 1024 * 1024) for k, v in
                            (("last", stat.last), ("avg", stat.avg), ("p95", stat.p95))})


def _pressure(values: dict[str, Pressure]) -> dict[str, pb.Pressure]:
    return {f"{r}_pressure": pb.Pressure(some_avg10=p.some_avg10, some_avg60=p.some_avg60,
                                         full_avg10=p.full_avg10, full_avg60=p.full_avg60)
            for r, p in values.items()}


def numa_cpu_usage(snap: NodeSnapshot, cpus: list[int]) -> float:
    return sum(snap.usage.per_cpu_cores.get(c, 0.0) for c in cpus)


def sections(snap: NodeSnapshot) -> dict[str, Message]:
    topo, kubelet = snap.topology, snap.kubelet
    return {
        "resources": pb.Resources(
            cpu_capacity_cores=snap.cpu_capacity_cores,
            cpu_allocatable_cores=snap.cpu_allocatable_cores,
            cpu_usage_cores=_cores(snap.usage.cpu_cores),
            memory_capacity_bytes=snap.usage.memory_total_bytes,
            memory_allocatable_bytes=snap.memory_allocatable_bytes,
            memory_usage_bytes=_bytes(snap.usage.memory_bytes),
            batch_cpu_millicores=snap.batch_cpu_millicores,
            batch_memory_bytes=None if snap.batch_memory_bytes is None else snap.batch_memory_bytes // 1024 * 1024,
            numa=[pb.NumaUsage(id=n.id, cpu_usage_cores=round(numa_cpu_usage(snap, n.cpus), 3))
                  for n in topo.numa_nodes] if snap.usage.per_cpu_cores else [],
            **_pressure(snap.usage.pressure),
        ),
        "topology": pb.Topology(
            sockets=topo.sockets, cores=topo.cores, threads=topo.threads,
            online_cpus=topo.online_cpus, offline_cpus=topo.offline_cpus,
            numa_nodes=[pb.NumaNode(id=n.id, cpus=n.cpus, memory_total_bytes=n.memory_total_bytes,
                                    memory_free_bytes=n.memory_free_bytes // 1024 * 1024,
                                    distances=n.distances, free_cpus=kubelet.free_cpus(n.cpus),
                                    free_cpus_known=kubelet.shared_cpus is not None)
                        for n in topo.numa_nodes],
            cpu_manager_policy=snap.kubelet.cpu_manager_policy,
            topology_manager_policy=snap.kubelet.topology_manager_policy,
            cpus=[pb.Cpu(id=c.id, core=c.core, socket=c.socket, numa=c.numa, l3=c.l3) for c in topo.cpus],
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
                        cpu_usage_cores=_cores(u.cpu_cores), memory_working_set_bytes=_bytes(u.memory_bytes),
                        cpu_request_cores=u.pod.cpu_request_cores, memory_request_bytes=u.pod.memory_request_bytes,
                        priority=u.pod.priority, kube_qos_class=u.pod.qos_class, **_pressure(u.pressure))
            for u in snap.pods
        ]),
        "qos": pb.QosState(
            offline_cpu_quota_cores=round(snap.qos.offline_cpu_quota_cores, 3),
            offline_memory_limit_bytes=snap.qos.offline_memory_limit_bytes,
            no_schedule_taint=snap.qos.no_schedule_taint,
            evictions_total=snap.qos.evictions_total,
            dry_run=snap.qos.dry_run,
            pressures=list(snap.qos.pressures),
        ),
    }


def full_report(node_name: str, snap: NodeSnapshot) -> pb.NodeReport:
    return pb.NodeReport(node_name=node_name, full=True, **sections(snap))
