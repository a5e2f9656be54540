"""CPU suppression and memory protection of the offline cgroups.

Offline pods live in groups: the kubelet's besteffort cgroup (every BestEffort pod) and, for
an offline pod of another QoS class (a Burstable pod annotated BE), its own pod cgroup. A
group's share of a budget is its pod count over all offline pods, and a pod cgroup never gets
more than its own limit (from the pod spec, as the kubelet sets it), which is restored when the
pod stops being offline. The spec, not the cgroup, is the source, so an agent restarted in the
middle never takes its own earlier write for the pod's limit.

CPU: every period the offline CFS quota is
    allocatable x threshold% - online usage,   never below `min_cores`
split over the groups. Changes under 1 % of the current quota are skipped.
Memory: once online memory use passes `online_threshold_percent` of allocatable, offline use
is capped at
    allocatable x limit% - online usage,       never below `min_bytes`
and the cap is lifted when online use falls `hysteresis_percent` below the threshold. On v2
the cap is memory.high (the kernel throttles and reclaims). On v1 memory.limit_in_bytes
cannot go below what the group already uses (EBUSY), so the limit is lowered at most
`step_bytes` below current usage per write, the kernel reclaiming as it goes; when that is
refused, memory.force_empty drops the group's page cache and the limit is pinned at what is
left. A group still above its target after `evict_after_samples` samples is reported stuck,
and the manager evicts its largest offenders.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from nodeagent.cgroup.driver import CgroupDriver
from nodeagent.health import Health

MIN_GROUP_CORES = 0.01  # the kernel's 1 ms quota floor at the default 100 ms period
PINNED_SLACK = 4 << 20  # usage this close to a pinned limit is still "at the limit"


@dataclass(frozen=True)
class CpuSuppressConfig:
    enabled: bool = True
    threshold_percent: float = 65.0
    min_cores: float = 1.0


@dataclass(frozen=True)
class MemoryProtectConfig:
    enabled: bool = True
    online_threshold_percent: float = 80.0
    limit_percent: float = 90.0
    hysteresis_percent: float = 5.0
    min_bytes: int = 512 << 20
    step_bytes: int = 256 << 20  # v1: how far below current usage one write may go
    evict_after_samples: int = 3  # a group this many samples above its target is evicted from


def split(total: float, weights: dict[str, int]) -> dict[str, float]:
    """`total` over groups in proportion to their weights (pod counts)."""
    whole = sum(weights.values()) or 1
    return {rel: total * w / whole for rel, w in weights.items()}


class CpuSuppression:
    def __init__(self, cfg: CpuSuppressConfig, driver: CgroupDriver, offline_rel: str) -> None:
        self.cfg, self._driver, self._rel = cfg, driver, offline_rel
        self.quotas: dict[str, float] = {}  # group -> quota in force
        self._own: dict[str, float | None] = {}  # pod group -> its own limit, restored on release

    @property
    def quota_cores(self) -> float | None:
        return sum(self.quotas.values()) if self.quotas else None

    def budget(self, allocatable_cores: float, online_usage_cores: float) -> float:
        return max(self.cfg.min_cores, allocatable_cores * self.cfg.threshold_percent / 100 - online_usage_cores)

    def apply(self, allocatable_cores: float, online_usage_cores: float, groups: dict[str, int] | None = None,
              limits: dict[str, float | None] | None = None) -> float | None:
        """Writes each group's share (`groups`: pod counts; `limits`: pod groups' own limits);
        returns the total quota in force (None: none)."""
        if not self.cfg.enabled:
            return None
        groups = groups or {self._rel: 1}
        self.release(set(self.quotas) - set(groups))
        for rel, share in split(self.budget(allocatable_cores, online_usage_cores), groups).items():
            own = (limits or {}).get(rel) if rel != self._rel else None
            if rel != self._rel:
                self._own[rel] = own
            quota = max(MIN_GROUP_CORES, share if own is None else min(share, own))
            current = self._driver.cpu_quota_cores(rel)
            if current is not None and abs(quota - current) < 0.01 * current:
                self.quotas[rel] = current
            elif self._driver.set_cpu_quota(rel, quota):
                self.quotas[rel] = quota
        return self.quota_cores

    def release(self, groups: set[str] | None = None) -> None:
        """Gives the groups back their own quota (unlimited for the QoS parent)."""
        for rel in list(self.quotas) if groups is None else groups:
            own = self._own.pop(rel, None)
            if self._driver.set_cpu_quota(rel, own) or rel != self._rel:
                self.quotas.pop(rel, None)  # a vanished pod cgroup has nothing left to restore


PAGE = 4096


class MemoryProtection:
    def __init__(self, cfg: MemoryProtectConfig, driver: CgroupDriver, offline_rel: str,
                 health: Health | None = None) -> None:
        self.cfg, self._driver, self._rel = cfg, driver, offline_rel
        self._health = health or driver.writer.health
        self.limits: dict[str, int] = {}  # group -> limit in force
        self.targets: dict[str, int] = {}  # group -> where the limit should be
        self.stuck: dict[str, int] = {}  # group -> consecutive samples above target
        self.pinned: set[str] = set()  # v1 groups held at what the kernel could not reclaim
        self._own: dict[str, int | None] = {}  # pod group -> its own limit, restored on release
        self._capping = False
        self._owners: dict[str, str] = {}

    @property
    def limit_bytes(self) -> int | None:
        return sum(self.limits.values()) if self.limits else None

    @limit_bytes.setter
    def limit_bytes(self, value: int | None) -> None:  # tests and release() hand state over
        self.limits = {} if value is None else {self._rel: value}

    def apply(self, allocatable_bytes: int, online_usage_bytes: int, groups: dict[str, int] | None = None,
              owners: dict[str, str] | None = None, limits: dict[str, int | None] | None = None) -> int | None:
        """Caps, keeps or lifts; returns the total cap in force (None: uncapped). `owners` names
        the pods of each group for the warning when a target cannot be reached; `limits` are
        pod groups' own limits."""
        self._owners = owners or {}
        if not self.cfg.enabled or allocatable_bytes <= 0:
            return None
        groups = groups or {self._rel: 1}
        used_percent = 100 * online_usage_bytes / allocatable_bytes
        if used_percent >= self.cfg.online_threshold_percent:
            self._capping = True
        elif used_percent < self.cfg.online_threshold_percent - self.cfg.hysteresis_percent:
            self._capping = False
        if not self._capping:
            self.release()
            return None
        self.release(set(self.limits) - set(groups))
        total = max(self.cfg.min_bytes, allocatable_bytes * self.cfg.limit_percent / 100 - online_usage_bytes)
        for rel, share in split(total, groups).items():
            own = (limits or {}).get(rel) if rel != self._rel else None
            if rel != self._rel:
                self._own[rel] = own
            target = max(1, int(share if own is None else min(share, own)))
            self.targets[rel] = target
            self._lower(rel, target)
            above = self.limits.get(rel, target + 1) > target
            self.stuck[rel] = self.stuck.get(rel, 0) + 1 if above else 0
        return self.limit_bytes

    def stuck_groups(self) -> dict[str, int]:
        """Groups that stayed above their target long enough: bytes still to free in each."""
        out = {}
        for rel, samples in self.stuck.items():
            if samples >= self.cfg.evict_after_samples:
                usage = self._driver.memory_usage(rel)
                if usage is not None and usage > self.targets[rel]:
                    out[rel] = usage - self.targets[rel]
        return out

    def _lower(self, rel: str, target: int) -> None:
        if rel in self.limits and self._drifted(rel, self.limits[rel]):
            del self.limits[rel]  # the kubelet's QoS sync rewrote it (Koordinator #1734): write ours again
            self.pinned.discard(rel)
        usage = self._driver.memory_usage(rel)
        if self._driver.layout.version == 2 or usage is None or usage <= target:
            if self.limits.get(rel) != target and self._driver.set_memory_cap(rel, target):
                self.limits[rel] = target
            return
        if rel in self.pinned and self.limits.get(rel, 0) <= usage + PINNED_SLACK:
            return  # pinned at what is left: only eviction, or the pods freeing memory, moves it now
        self.pinned.discard(rel)
        step = max(target, usage - self.cfg.step_bytes)
        if self.limits.get(rel) == step or self._driver.set_memory_cap(rel, step):
            self.limits[rel] = step
            return
        if self._driver.writer.last_errno != errno.EBUSY:
            return
        # The kernel could not reclaim `step` bytes: drop the page cache, then pin the limit at
        # what is left, which is never below usage and so never refused.
        self._driver.reclaim(rel)
        left = self._driver.memory_usage(rel)
        pinned = max(target, left or usage)
        if self.limits.get(rel) != pinned and self._driver.set_memory_cap(rel, pinned):
            self.limits[rel] = pinned
        if pinned > target:
            self.pinned.add(rel)
            self._health.error("memory_protect", "target_unreachable",
                               f"{self._driver.memory_cap_file(rel)}: held at {pinned} bytes, target {target} "
                               f"(usage {left}; the rest is not reclaimable without swap); "
                               f"pods: {self._owners.get(rel, 'unknown')}")

    def _drifted(self, rel: str, limit: int) -> bool:
        """The cap in the file is no longer ours. Within a page is ours: v1 rounds to pages."""
        current = self._driver.memory_cap(rel)
        return current is None or abs(current - limit) >= PAGE

    def release(self, groups: set[str] | None = None) -> None:
        """Gives the groups back their own limit (unlimited for the QoS parent)."""
        for rel in list(self.limits) if groups is None else groups:
            own = self._own.pop(rel, None) if self._driver.layout.version == 1 else None  # v2 caps memory.high only
            if self._driver.set_memory_cap(rel, own) or rel != self._rel:
                self.limits.pop(rel, None)
            self.stuck.pop(rel, None)
            self.targets.pop(rel, None)
            self.pinned.discard(rel)
