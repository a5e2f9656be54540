"""Eviction of offline pods under pressure, with a NoSchedule taint, cool-down and dry-run.

Three triggers, each a `Pressure` naming the resource and how much must be freed:
- memory: node memory at or above `high_watermark_percent` of allocatable for
  `consecutive_samples` samples; free down to `low_watermark_percent` (as koordlet's
  BEMemoryEvict releases down to its lower bound), several pods in one round if need be;
- CPU, as koordlet's BECPUEvict: offline pods' CPU satisfaction (the quota in force over what
  they requested) below `cpu_satisfaction_lower_percent` while they use at least
  `cpu_usage_ratio_percent` of that quota, for `consecutive_samples` samples; free
  request x (upper - satisfaction). Node CPU over the high watermark counts only while no
  quota holds offline pods: when suppression already holds them, evicting them frees nothing
  the online pods are not already getting;
- memory protection that cannot reach its target (v1 without reclaimable memory): the group's
  excess, from that group's pods only.
Victims: lowest priority first, then the largest usage over request of the pressured
resource; pods that use (next to) none of it are never chosen, since evicting them frees
nothing. At most `max_per_round` per sample, none during the cool-down after an eviction. The
taint (`volcano.sh/offline-job-evicting`, as Volcano's agent) stays while any pressure does
and through the cool-down. In dry-run nothing is called: decisions are logged and counted.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Protocol

from nodeagent.collect.pod_usage import PodUsage
from nodeagent.health import Health

log = logging.getLogger("nodeagent.qos")

IDLE = {"cpu": 0.01, "memory": float(1 << 20)}  # below this a pod frees nothing worth an eviction


@dataclass(frozen=True)
class EvictionConfig:
    enabled: bool = True
    dry_run: bool = False
    high_watermark_percent: float = 90.0
    low_watermark_percent: float = 85.0
    consecutive_samples: int = 5
    cpu_satisfaction_lower_percent: float = 60.0
    cpu_satisfaction_upper_percent: float = 80.0
    cpu_usage_ratio_percent: float = 90.0
    cooldown_s: float = 60.0
    max_per_round: int = 5
    taint_key: str = "volcano.sh/offline-job-evicting"


@dataclass(frozen=True)
class Pressure:
    resource: str  # cpu | memory
    need: float  # cores or bytes to free
    cause: str  # node_memory | node_cpu | cpu_satisfaction | memory_target
    pods: tuple[str, ...] | None = None  # uids the victims must come from; None: any offline pod


class Evictor(Protocol):
    def evict(self, namespace: str, name: str) -> None: ...


class Tainter(Protocol):
    def set_taint(self, key: str, effect: str, present: bool) -> None: ...


def _used(u: PodUsage, resource: str) -> float:
    """Memory as it is now (what eviction frees); CPU over the window (one sample is noise)."""
    if resource == "memory":
        return u.memory_bytes.last if u.memory_bytes is not None else 0.0
    return u.cpu_cores.avg if u.cpu_cores is not None else 0.0


def _request(u: PodUsage, resource: str) -> float:
    return float(u.pod.memory_request_bytes) if resource == "memory" else u.pod.cpu_request_cores


def victims(pressure: Pressure, offline: list[PodUsage], limit: int) -> list[PodUsage]:
    """Lowest priority first, then largest usage over request; enough to free `need`."""
    allowed = set(pressure.pods) if pressure.pods is not None else None
    candidates = [u for u in offline if _used(u, pressure.resource) >= IDLE[pressure.resource]
                  and (allowed is None or u.pod.uid in allowed)]
    candidates.sort(key=lambda u: (u.pod.priority, -(_used(u, pressure.resource) - _request(u, pressure.resource)),
                                   u.pod.uid))
    chosen, freed = [], 0.0
    for u in candidates[:limit]:
        if freed >= pressure.need:
            break
        chosen.append(u)
        freed += _used(u, pressure.resource)
    return chosen


class Eviction:
    def __init__(self, cfg: EvictionConfig, evictor: Evictor, tainter: Tainter,
                 clock: Callable[[], float] = time.monotonic, health: Health | None = None) -> None:
        self.cfg, self._evictor, self._tainter, self._clock = cfg, evictor, tainter, clock
        self._health = health or Health()  # failures repeat every sample: warn once, count all
        self.over: Counter[str] = Counter()  # trigger -> consecutive samples it held
        self.tainted = False
        self.results: Counter[tuple[str, str]] = Counter()  # (resource, ok|failed|dry_run)
        self._last_eviction = float("-inf")

    def node_pressure(self, cpu_percent: float | None, memory_percent: float | None, allocatable_cores: float,
                      allocatable_bytes: float, offline_held: bool) -> list[Pressure]:
        """Memory and node-CPU watermarks; an unknown figure is no evidence either way."""
        high, low = self.cfg.high_watermark_percent, self.cfg.low_watermark_percent
        found = []
        # `_held` counts consecutive samples, so both are asked every time; neither holds for an unknown figure
        memory_held = self._held("node_memory", memory_percent is not None and memory_percent >= high)
        cpu_held = self._held("node_cpu", cpu_percent is not None and cpu_percent >= high and not offline_held)
        if memory_held and memory_percent is not None:
            found.append(Pressure("memory", (memory_percent - low) / 100 * allocatable_bytes, "node_memory"))
        if cpu_held and cpu_percent is not None:
            found.append(Pressure("cpu", (cpu_percent - low) / 100 * allocatable_cores, "node_cpu"))
        return found

    def cpu_satisfaction(self, quota_cores: float | None, offline_used_cores: float | None,
                         offline_request_cores: float) -> list[Pressure]:
        """koordlet's BE CPU eviction: offline pods get far less than they asked for and use all of it."""
        starving = False
        satisfaction = 1.0
        if quota_cores and offline_request_cores > 0 and offline_used_cores is not None:
            satisfaction = quota_cores / offline_request_cores
            starving = (satisfaction < self.cfg.cpu_satisfaction_lower_percent / 100 and
                        offline_used_cores >= self.cfg.cpu_usage_ratio_percent / 100 * quota_cores)
        if not self._held("cpu_satisfaction", starving):
            return []
        need = offline_request_cores * (self.cfg.cpu_satisfaction_upper_percent / 100 - satisfaction)
        return [Pressure("cpu", need, "cpu_satisfaction")]

    def _held(self, trigger: str, now: bool) -> bool:
        self.over[trigger] = self.over[trigger] + 1 if now else 0
        return self.over[trigger] >= self.cfg.consecutive_samples

    def act(self, pressures: list[Pressure], offline: list[PodUsage]) -> list[PodUsage]:
        """Taints and evicts for this sample's pressures; returns the pods evicted (or that would be)."""
        if not self.cfg.enabled:
            return []
        cooling = self._clock() - self._last_eviction < self.cfg.cooldown_s
        if not pressures:
            if self.tainted and not cooling:
                self._taint(False)
            return []
        if not self.tainted:
            self._taint(True)
        if cooling:
            return []
        chosen: list[PodUsage] = []
        for pressure in pressures:
            left = self.cfg.max_per_round - len(chosen)
            pool = [u for u in offline if u not in chosen]
            for usage in victims(pressure, pool, left):
                self._evict(usage, pressure)
                chosen.append(usage)
        if chosen:
            self._last_eviction = self._clock()
        return chosen

    def _evict(self, usage: PodUsage, pressure: Pressure) -> None:
        pod, resource = usage.pod, pressure.resource
        if self.cfg.dry_run:
            log.info("dry-run: would evict %s/%s (%s)", pod.namespace, pod.name, pressure.cause)
            self.results[(resource, "dry_run")] += 1
            return
        try:
            self._evictor.evict(pod.namespace, pod.name)
        except Exception as exc:  # API errors, PDB refusals (429), network: counted, retried later
            self._health.error("eviction", "evict_failed", f"{pod.namespace}/{pod.name}: {exc}")
            self.results[(resource, "failed")] += 1
            return
        log.info("evicted %s/%s (%s, %.3g to free)", pod.namespace, pod.name, pressure.cause, pressure.need)
        self.results[(resource, "ok")] += 1

    def _taint(self, present: bool) -> None:
        if self.cfg.dry_run:
            log.info("dry-run: would %s taint %s", "add" if present else "remove", self.cfg.taint_key)
            self.tainted = present
            return
        try:
            self._tainter.set_taint(self.cfg.taint_key, "NoSchedule", present)
        except Exception as exc:
            self._health.error("eviction", "taint_failed", f"{self.cfg.taint_key}: {exc}")
            return
        self.tainted = present
