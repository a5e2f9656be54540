"""Runs the QoS strategies once per period from the latest node and pod usage.

Online usage is node usage minus what offline pods use, so system daemons and the kubelet
count as online load that offline work must yield to. Online pods' cgroups are handed to the
writer's guard before any strategy runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodeagent.cgroup.driver import CgroupDriver, CgroupWriter
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.pod_usage import PodUsage
from nodeagent.qos.eviction import EvictionConfig, Evictor, Tainter, WatermarkEviction
from nodeagent.qos.strategies import CpuSuppressConfig, CpuSuppression, MemoryProtectConfig, MemoryProtection
from nodeagent.report import QosState


@dataclass(frozen=True)
class QosConfig:
    enabled: bool = True
    default_level: str = "LS"  # for pods without the volcano.sh/qos-level annotation
    offline_cgroup: str = ""  # relative to each controller root; "" = the kubelet's besteffort cgroup
    cpu_suppress: CpuSuppressConfig = field(default_factory=CpuSuppressConfig)
    memory_protect: MemoryProtectConfig = field(default_factory=MemoryProtectConfig)
    eviction: EvictionConfig = field(default_factory=EvictionConfig)


class QosManager:
    def __init__(self, cfg: QosConfig, driver: CgroupDriver, writer: CgroupWriter,
                 evictor: Evictor, tainter: Tainter) -> None:
        self._driver, self._writer = driver, writer
        self.offline_rel = cfg.offline_cgroup or driver.layout.qos_dir("BestEffort")
        self.cpu = CpuSuppression(cfg.cpu_suppress, driver, self.offline_rel)
        self.memory = MemoryProtection(cfg.memory_protect, driver, self.offline_rel)
        self.eviction = WatermarkEviction(cfg.eviction, evictor, tainter)

    def run(self, allocatable_cores: float, allocatable_bytes: int, node: NodeUsage,
            pods: list[PodUsage]) -> QosState:
        layout = self._driver.layout
        self._writer.protect([
            layout.path(c, layout.pod_dir(u.pod.uid, u.pod.qos_class))
            for u in pods if u.pod.online for c in ("cpu", "memory")
        ])
        offline = [u for u in pods if not u.pod.online]
        online_cpu = max(0.0, node.cpu_cores.last - sum(u.cpu_cores.last for u in offline))
        online_mem = max(0, int(node.memory_bytes.last - sum(u.memory_bytes.last for u in offline)))
        quota = self.cpu.apply(allocatable_cores, online_cpu) if offline else None
        limit = self.memory.apply(allocatable_bytes, online_mem)
        cpu_percent = 100 * node.cpu_cores.last / allocatable_cores if allocatable_cores else 0.0
        mem_percent = 100 * node.memory_bytes.last / allocatable_bytes if allocatable_bytes else 0.0
        self.eviction.observe(cpu_percent, mem_percent, offline)
        return QosState(
            offline_cpu_quota_cores=quota or 0.0,
            offline_memory_limit_bytes=limit or 0,
            no_schedule_taint=self.eviction.tainted,
            evictions_total=sum(n for (_, r), n in self.eviction.results.items() if r == "ok"),
            dry_run=self.eviction.cfg.dry_run,
        )
