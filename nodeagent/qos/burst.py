"""What the agent writes on online pods: CPU burst for LS pods, memory.low for all (v2).

CPU burst lets a quota-limited pod borrow unused quota from earlier periods.
As koordlet's CPUBurst (policy cpuBurstOnly) and Volcano's CPUBurst handler: the pod's and its
containers' `cpu.cfs_burst_us` (v1, kernel 5.14+) or `cpu.max.burst` (v2) become `percent` of
their own quota; the kernel refuses a burst above the quota, so 100 % is the ceiling. Pods
without a quota (no CPU limit) have nothing to burst over and are left alone. Each pod is
written once; its entry is dropped when it leaves.

memory.low (cgroup v2 only; v1 has no such knob) = `low_percent` of the pod's memory request,
as Volcano's MemoryQoSV2 and koordlet's CgroupReconcile set it: under memory pressure the kernel
reclaims from offline pods (capped by memory.high) before it touches what online pods asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.cgroup.driver import CgroupDriver
from nodeagent.pods import PodInfo


@dataclass(frozen=True)
class CpuBurstConfig:
    enabled: bool = True
    percent: float = 100.0  # burst = this share of the pod's own quota (the kernel allows up to 100 %)


@dataclass(frozen=True)
class MemoryLowConfig:
    enabled: bool = True
    low_percent: float = 100.0  # memory.low = this share of the pod's memory request


@dataclass
class MemoryLow:
    cfg: MemoryLowConfig
    driver: CgroupDriver

    def __post_init__(self) -> None:
        self.done: dict[str, int] = {}  # pod uid -> bytes written

    def apply(self, pods: list[PodInfo]) -> int:
        """Sets memory.low on online pods with a memory request (v2); returns how many were written."""
        if not self.cfg.enabled or self.driver.layout.version != 2:
            return 0
        written = 0
        for pod in pods:
            low = int(pod.memory_request_bytes * self.cfg.low_percent / 100)
            if low <= 0 or self.done.get(pod.uid) == low:
                continue
            rel = self.driver.layout.pod_dir(pod.uid, pod.qos_class)
            if self.driver.layout.path("memory", rel).is_dir() and self.driver.set_memory_low(rel, low):
                self.done[pod.uid] = low
                written += 1
        live = {p.uid for p in pods}
        self.done = {uid: low for uid, low in self.done.items() if uid in live}
        return written


@dataclass
class CpuBurst:
    cfg: CpuBurstConfig
    driver: CgroupDriver

    def __post_init__(self) -> None:
        self.done: set[str] = set()  # pod uids written

    def apply(self, pods: list[PodInfo]) -> int:
        """Sets the burst of LS pods not done yet; returns how many cgroups were written."""
        if not self.cfg.enabled:
            return 0
        written = 0
        for pod in pods:
            if pod.uid in self.done:
                continue
            rel = self.driver.layout.pod_dir(pod.uid, pod.qos_class)
            if not self.driver.layout.path("cpu", rel).is_dir():
                continue  # not started yet: next sample
            written += self.burst_tree(rel)
            self.done.add(pod.uid)
        self.done &= {p.uid for p in pods}
        return written

    def burst_tree(self, rel: str) -> int:
        """The pod cgroup and its containers' (one level down); returns how many were written."""
        pod_dir = self.driver.layout.path("cpu", rel)
        children = sorted(f"{rel}/{d.name}" for d in pod_dir.iterdir() if d.is_dir())
        return sum(self._set(group) for group in (rel, *children))

    def _set(self, rel: str) -> int:
        quota = self.driver.cpu_quota_cores(rel)
        if quota is None:
            return 0
        burst = quota * self.cfg.percent / 100
        current = self.driver.cpu_burst_cores(rel)
        if current is not None and abs(current - burst) < 1e-6:
            return 0
        return int(self.driver.set_cpu_burst(rel, burst))
