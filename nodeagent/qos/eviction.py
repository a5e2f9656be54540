"""Watermark eviction of offline pods, with a NoSchedule taint, cool-down and dry-run.

When node CPU or memory use stays at or above `high_watermark_percent` of allocatable for
`consecutive_samples` samples, the node is tainted NoSchedule (offline work only tolerates it
by choice) and offline pods are evicted through the Eviction API, lowest priority first and,
within a priority, largest user of the pressured resource first, at most `max_per_round` per
sample and none during the cool-down after an eviction. The taint is removed once use is
below the watermark and the cool-down has passed. In dry-run nothing is called: decisions are
logged and counted only.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Protocol

from nodeagent.collect.pod_usage import PodUsage

log = logging.getLogger("nodeagent.qos")


@dataclass(frozen=True)
class EvictionConfig:
    enabled: bool = True
    dry_run: bool = False
    high_watermark_percent: float = 90.0
    consecutive_samples: int = 5
    cooldown_s: float = 60.0
    max_per_round: int = 1
    taint_key: str = "volcano.sh/offline-job-evicting"


class Evictor(Protocol):
    def evict(self, namespace: str, name: str) -> None: ...


class Tainter(Protocol):
    def set_taint(self, key: str, effect: str, present: bool) -> None: ...


class WatermarkEviction:
    def __init__(self, cfg: EvictionConfig, evictor: Evictor, tainter: Tainter,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg, self._evictor, self._tainter, self._clock = cfg, evictor, tainter, clock
        self.over_count = 0
        self.tainted = False
        self.results: Counter[tuple[str, str]] = Counter()  # (resource, ok|failed|dry_run)
        self._last_eviction = float("-inf")

    def observe(self, cpu_percent: float, memory_percent: float, offline: list[PodUsage]) -> list[PodUsage]:
        """One sample; returns the pods it evicted (or would have, in dry-run)."""
        if not self.cfg.enabled:
            return []
        now = self._clock()
        high = self.cfg.high_watermark_percent
        resource = "memory" if memory_percent >= high else "cpu" if cpu_percent >= high else ""
        self.over_count = self.over_count + 1 if resource else 0
        cooling = now - self._last_eviction < self.cfg.cooldown_s
        if not resource:
            if self.tainted and not cooling:
                self._taint(False)
            return []
        if self.over_count < self.cfg.consecutive_samples:
            return []
        if not self.tainted:
            self._taint(True)
        if cooling:
            return []
        victims = sorted(offline, key=lambda u: (
            u.pod.priority, -(u.memory_bytes.last if resource == "memory" else u.cpu_cores.last)))
        chosen = victims[: self.cfg.max_per_round]
        for usage in chosen:
            self._evict(usage, resource)
        if chosen:
            self._last_eviction = now
        return chosen

    def _evict(self, usage: PodUsage, resource: str) -> None:
        pod = usage.pod
        if self.cfg.dry_run:
            log.info("dry-run: would evict %s/%s for %s pressure", pod.namespace, pod.name, resource)
            self.results[(resource, "dry_run")] += 1
            return
        try:
            self._evictor.evict(pod.namespace, pod.name)
        except Exception as exc:  # API errors, PDB refusals (429), network: counted, retried later
            log.warning("evicting %s/%s failed: %s", pod.namespace, pod.name, exc)
            self.results[(resource, "failed")] += 1
            return
        log.info("evicted %s/%s for %s pressure", pod.namespace, pod.name, resource)
        self.results[(resource, "ok")] += 1

    def _taint(self, present: bool) -> None:
        if self.cfg.dry_run:
            log.info("dry-run: would %s taint %s", "add" if present else "remove", self.cfg.taint_key)
            self.tainted = present
            return
        try:
            self._tainter.set_taint(self.cfg.taint_key, "NoSchedule", present)
        except Exception as exc:
            log.warning("updating taint %s failed: %s", self.cfg.taint_key, exc)
            return
        self.tainted = present
