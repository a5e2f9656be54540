"""Runs the QoS strategies once per period from the latest node and pod usage.

Online usage is node usage minus what offline pods use, so system daemons and the kubelet
count as online load that offline work must yield to. Online pods' cgroups are handed to the
writer's guard before any strategy runs (CPU burst for LS pods and memory.low for online
pods go through their own writer, used for those knobs only). A figure that is unknown
this sample leaves what it drives as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from nodeagent.cgroup.driver import CgroupDriver, CgroupWriter, open_driver
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.pod_usage import PodUsage
from nodeagent.collect.window import Stat
from nodeagent.qos.burst import CpuBurst, CpuBurstConfig, MemoryLow, MemoryLowConfig
from nodeagent.qos.eviction import Eviction, EvictionConfig, Evictor, Pressure, Tainter
from nodeagent.qos.strategies import CpuSuppressConfig, CpuSuppression, MemoryProtectConfig, MemoryProtection
from nodeagent.report import QosState


@dataclass(frozen=True)
class QosConfig:
    enabled: bool = True
    default_level: str = ""  # "" = by Kubernetes QoS class (BestEffort -> BE, else LS); or one level for all
    batch_ratio_percent: float = 60.0  # share of what online pods leave that is offered as batch-*
    batch_samples: int = 5  # samples the batch figure is smoothed over
    offline_cgroup: str = ""  # relative to each controller root; "" = the kubelet's besteffort cgroup
    cpu_suppress: CpuSuppressConfig = field(default_factory=CpuSuppressConfig)
    memory_protect: MemoryProtectConfig = field(default_factory=MemoryProtectConfig)
    cpu_burst: CpuBurstConfig = field(default_factory=CpuBurstConfig)
    memory_low: MemoryLowConfig = field(default_factory=MemoryLowConfig)
    eviction: EvictionConfig = field(default_factory=EvictionConfig)


def online_usage(node: NodeUsage, pods: list[PodUsage],
                 pick: Callable[[Stat], float]) -> tuple[float | None, float | None]:
    """(cores, bytes) used by everything but offline pods, by the picked statistic; None where
    the node figure is unknown. An offline pod whose figure is unknown counts as 0, which
    overstates online use: more suppression, less batch, never the other way round."""
    offline = [u for u in pods if not u.pod.online]
    cpu = mem = None
    if node.cpu_cores is not None:
        cpu = max(0.0, pick(node.cpu_cores) - sum(pick(u.cpu_cores) for u in offline if u.cpu_cores))
    if node.memory_bytes is not None:
        mem = max(0.0, pick(node.memory_bytes) - sum(pick(u.memory_bytes) for u in offline if u.memory_bytes))
    return cpu, mem


class QosManager:
    def __init__(self, cfg: QosConfig, driver: CgroupDriver, writer: CgroupWriter,
                 evictor: Evictor, tainter: Tainter) -> None:
        self._driver, self._writer = driver, writer
        self.offline_rel = cfg.offline_cgroup or driver.layout.qos_dir("BestEffort")
        self.cpu = CpuSuppression(cfg.cpu_suppress, driver, self.offline_rel)
        self.memory = MemoryProtection(cfg.memory_protect, driver, self.offline_rel, writer.health)
        # Burst and memory.low are written on online pods, so they have their own writer, outside the guard.
        self.online_writer = CgroupWriter(writer.health)
        online_driver = open_driver(driver.layout, self.online_writer)
        self.burst = CpuBurst(cfg.cpu_burst, online_driver)
        self.memory_low = MemoryLow(cfg.memory_low, online_driver)
        self.eviction = Eviction(cfg.eviction, evictor, tainter, health=writer.health)

    def release(self) -> None:
        """Lifts what the strategies imposed, so a removed agent leaves no offline pods throttled."""
        self.cpu.release()
        self.memory.release()

    def _groups(self, offline: list[PodUsage]) -> tuple[dict[str, int], dict[str, list[PodUsage]]]:
        """Offline cgroups and their pod counts: the offline parent, plus the own cgroup of each
        offline pod that lives elsewhere (an annotated Burstable or Guaranteed pod)."""
        layout = self._driver.layout
        members: dict[str, list[PodUsage]] = {self.offline_rel: []}
        for u in offline:
            rel = layout.pod_dir(u.pod.uid, u.pod.qos_class)
            inside = rel.startswith(self.offline_rel.rstrip("/") + "/")
            members.setdefault(self.offline_rel if inside else rel, []).append(u)
        return {rel: max(1, len(pods)) for rel, pods in members.items()}, members

    def run(self, allocatable_cores: float, allocatable_bytes: int, node: NodeUsage,
            pods: list[PodUsage]) -> QosState:
        layout = self._driver.layout
        offline = [u for u in pods if not u.pod.online]
        weights, members = self._groups(offline)
        # 1. Lift limits from groups that are no longer offline, before they become protected.
        self.cpu.release(set(self.cpu.quotas) - set(weights))
        self.memory.release(set(self.memory.limits) - set(weights))
        self._writer.protect([
            layout.path(c, layout.pod_dir(u.pod.uid, u.pod.qos_class))
            for u in pods if u.pod.online for c in ("cpu", "memory")
        ])
        # 2. Suppress and cap offline groups by what online work uses now.
        online_cpu, online_mem = online_usage(node, pods, lambda s: s.last)
        quota = self.cpu.quota_cores
        own = {rel: group[0].pod for rel, group in members.items() if rel != self.offline_rel and group}
        if online_cpu is not None and offline:
            quota = self.cpu.apply(allocatable_cores, online_cpu, weights,
                                   {rel: pod.cpu_limit_cores for rel, pod in own.items()})
        limit = self.memory.limit_bytes
        if online_mem is not None:
            owners = {rel: ", ".join(f"{u.pod.namespace}/{u.pod.name}" for u in group)
                      for rel, group in members.items()}
            limit = self.memory.apply(allocatable_bytes, int(online_mem), weights, owners,
                                      {rel: pod.memory_limit_bytes for rel, pod in own.items()})
        self.burst.apply([u.pod for u in pods if u.pod.qos_level == "LS"])
        self.memory_low.apply([u.pod for u in pods if u.pod.online])
        # 3. Evict where suppression and capping are not enough.
        pressures = self._pressures(allocatable_cores, allocatable_bytes, node, offline, quota, members)
        self.eviction.act(pressures, offline)
        return QosState(
            offline_cpu_quota_cores=quota or 0.0,
            offline_memory_limit_bytes=limit or 0,
            no_schedule_taint=self.eviction.tainted,
            evictions_total=sum(n for (_, r), n in self.eviction.results.items() if r == "ok"),
            dry_run=self.eviction.cfg.dry_run,
            pressures=tuple(p.cause for p in pressures),
        )


    def _pressures(self, allocatable_cores: float, allocatable_bytes: int, node: NodeUsage,
                   offline: list[PodUsage], quota: float | None,
                   members: dict[str, list[PodUsage]]) -> list[Pressure]:
        offline_cpu = sum(u.cpu_cores.last for u in offline if u.cpu_cores)
        pressures = self.eviction.node_pressure(
            _percent(node.cpu_cores, allocatable_cores), _percent(node.memory_bytes, allocatable_bytes),
            allocatable_cores, allocatable_bytes, offline_held=quota is not None)
        pressures += self.eviction.cpu_satisfaction(quota, offline_cpu, sum(u.pod.cpu_request_cores for u in offline))
        for rel, excess in self.memory.stuck_groups().items():
            uids = tuple(u.pod.uid for u in members.get(rel, []))
            pressures.append(Pressure("memory", excess, "memory_target", uids))
        return pressures


def _percent(stat: Stat | None, allocatable: float) -> float | None:
    if stat is None:
        return None
    return 100 * stat.last / allocatable if allocatable else 0.0
