"""Node CPU and memory use through psutil, pointed at the configured /proc.

CPU is busy time between two samples (the first sample only primes the delta), in cores.
Memory is total - available: the working set, page cache excluded (counting cache caused
premature evictions in Volcano #5333).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import psutil

from nodeagent.collect.paths import HostPaths
from nodeagent.collect.window import Stat, Window
from nodeagent.health import Health

NAME = "node_usage"
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")


@contextmanager
def procfs(root: str) -> Iterator[None]:
    saved, psutil.PROCFS_PATH = psutil.PROCFS_PATH, root
    try:
        yield
    finally:
        psutil.PROCFS_PATH = saved


@dataclass(frozen=True)
class NodeUsage:
    cpu_cores: Stat
    memory_bytes: Stat
    memory_total_bytes: int


class NodeUsageCollector:
    def __init__(self, paths: HostPaths, health: Health, window: int) -> None:
        self._paths, self._health = paths, health
        self._cpu, self._mem = Window(window), Window(window)
        self._prev: tuple[float, float] | None = None  # (monotonic, busy seconds)
        self._total = 0

    def sample(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        try:
            with procfs(str(self._paths.proc_root)):
                times = psutil.cpu_times()
                memory = psutil.virtual_memory()
        except (OSError, ValueError, IndexError, KeyError) as exc:
            self._health.error(NAME, "read_failed", exc)
            return
        busy = sum(getattr(times, f, 0.0) for f in _BUSY)
        if self._prev is not None and now > self._prev[0]:
            self._cpu.add(max(0.0, (busy - self._prev[1]) / (now - self._prev[0])))
        self._prev = (now, busy)
        self._total = int(memory.total)
        self._mem.add(float(memory.total - memory.available))
        self._health.ok(NAME)

    def usage(self) -> NodeUsage:
        return NodeUsage(self._cpu.stat(), self._mem.stat(), self._total)
