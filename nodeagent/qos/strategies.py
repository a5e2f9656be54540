"""CPU suppression and memory protection of the offline parent cgroup.

CPU: every period the offline parent's CFS quota becomes
    allocatable x threshold% - online usage,   never below `min_cores`
so offline work gets what online pods leave under the threshold. Changes under 1 % of the
current quota are skipped to spare the kernel pointless writes.
Memory: once online memory use passes `online_threshold_percent` of allocatable, the offline
parent is capped (v1 memory.limit_in_bytes, v2 memory.high) at
    allocatable x limit% - online usage,       never below `min_bytes`
and the cap is lifted again when online use falls `hysteresis_percent` below the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.cgroup.driver import CgroupDriver


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


class CpuSuppression:
    def __init__(self, cfg: CpuSuppressConfig, driver: CgroupDriver, offline_rel: str) -> None:
        self.cfg, self._driver, self._rel = cfg, driver, offline_rel
        self.quota_cores: float | None = None

    def budget(self, allocatable_cores: float, online_usage_cores: float) -> float:
        return max(self.cfg.min_cores, allocatable_cores * self.cfg.threshold_percent / 100 - online_usage_cores)

    def apply(self, allocatable_cores: float, online_usage_cores: float) -> float | None:
        if not self.cfg.enabled:
            return None
        quota = self.budget(allocatable_cores, online_usage_cores)
        current = self._driver.cpu_quota_cores(self._rel)
        if current is not None and abs(quota - current) < 0.01 * current:
            self.quota_cores = current
        elif self._driver.set_cpu_quota(self._rel, quota):
            self.quota_cores = quota
        return self.quota_cores


PAGE = 4096


class MemoryProtection:
    def __init__(self, cfg: MemoryProtectConfig, driver: CgroupDriver, offline_rel: str) -> None:
        self.cfg, self._driver, self._rel = cfg, driver, offline_rel
        self.limit_bytes: int | None = None

    def apply(self, allocatable_bytes: int, online_usage_bytes: int) -> int | None:
        if not self.cfg.enabled or allocatable_bytes <= 0:
            return None
        used_percent = 100 * online_usage_bytes / allocatable_bytes
        if used_percent >= self.cfg.online_threshold_percent:
            limit = int(max(self.cfg.min_bytes, allocatable_bytes * self.cfg.limit_percent / 100 - online_usage_bytes))
            if (limit != self.limit_bytes or self._drifted(limit)) and self._driver.set_memory_cap(self._rel, limit):
                self.limit_bytes = limit
        elif self.limit_bytes is not None and \
                used_percent < self.cfg.online_threshold_percent - self.cfg.hysteresis_percent:
            if self._driver.set_memory_cap(self._rel, None):
                self.limit_bytes = None
        return self.limit_bytes

    def _drifted(self, limit: int) -> bool:
        """Someone else (the kubelet's QoS sync) rewrote the cap: put ours back, once a period.
        Within a page of ours is ours: cgroup v1 rounds the limit to the page size."""
        current = self._driver.memory_cap(self._rel)
        return current is None or abs(current - limit) >= PAGE
