"""Node CPU and memory use through psutil, pointed at the configured /proc.

CPU is busy time between two samples (the first sample only primes the delta), in cores, for
the node and (last sample only) per CPU, which the report groups by NUMA node. psutil numbers
per-CPU times by position, not CPU id, so the per-CPU lines of /proc/stat are read directly.
Memory is total - available: the working set, page cache excluded (counting cache caused
premature evictions in Volcano #5333).
Unknown is not zero: CPU is None until two samples exist, and both figures are None after a
sample that failed (the window's older values are not passed off as current).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import psutil

from nodeagent.collect.window import Stat, Window
from nodeagent.health import Health
from nodeagent.host.paths import HostPaths
from nodeagent.host.psi import Pressure, read_node_pressure

NAME = "node_usage"
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)  # the same fields as columns of a /proc/stat cpuN line
_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def per_cpu_busy_s(stat_text: str) -> dict[int, float]:
    """Busy seconds per CPU id from /proc/stat; lines that do not parse are skipped."""
    busy = {}
    for line in stat_text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            try:
                fields = [int(v) for v in rest.split()]
                busy[int(name[3:])] = sum(fields[i] for i in _BUSY_COLUMNS) / _TICKS_PER_S
            except (ValueError, IndexError):
                continue
    return busy


@contextmanager
def procfs(root: str) -> Iterator[None]:
    saved, psutil.PROCFS_PATH = psutil.PROCFS_PATH, root
    try:
        yield
    finally:
        psutil.PROCFS_PATH = saved


@dataclass(frozen=True)
class NodeUsage:
    cpu_cores: Stat | None  # None: unknown
    memory_bytes: Stat | None
    memory_total_bytes: int
    per_cpu_cores: dict[int, float] = field(default_factory=dict)  # last sample
    pressure: dict[str, Pressure] = field(default_factory=dict)  # cpu/memory/io; absent: unknown


class NodeUsageCollector:
    def __init__(self, paths: HostPaths, health: Health, window: int) -> None:
        self._paths, self._health = paths, health
        self._cpu, self._mem = Window(window), Window(window)
        self._prev: tuple[float, float] | None = None  # (monotonic, busy seconds)
        self._prev_per_cpu: dict[int, float] = {}
        self._per_cpu: dict[int, float] = {}
        self._total = 0
        self._fresh = False  # the last sample succeeded
        self._pressure: dict[str, Pressure] = {}

    def sample(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        try:
            with procfs(str(self._paths.proc_root)):
                times = psutil.cpu_times()
                memory = psutil.virtual_memory()
        except (OSError, ValueError, IndexError, KeyError) as exc:
            self._health.error(NAME, "read_failed", exc)
            self._fresh, self._prev = False, None  # the next good sample only primes the delta again
            return
        try:
            per_cpu = per_cpu_busy_s((self._paths.proc_root / "stat").read_text())
        except OSError as exc:
            self._health.error(NAME, "read_failed", exc)
            per_cpu = {}
        busy = sum(getattr(times, f, 0.0) for f in _BUSY)
        if self._prev is not None and now > self._prev[0]:
            elapsed = now - self._prev[0]
            self._cpu.add(max(0.0, (busy - self._prev[1]) / elapsed))
            self._per_cpu = {cpu: max(0.0, (b - self._prev_per_cpu[cpu]) / elapsed)
                             for cpu, b in per_cpu.items() if cpu in self._prev_per_cpu}
        self._prev, self._prev_per_cpu = (now, busy), per_cpu
        self._total = int(memory.total)
        self._mem.add(float(memory.total - memory.available))
        self._fresh = True
        self._pressure = read_node_pressure(self._paths.proc_root, self._health)
        self._health.ok(NAME)

    def usage(self) -> NodeUsage:
        if not self._fresh:
            return NodeUsage(None, None, self._total, {})
        return NodeUsage(self._cpu.stat(), self._mem.stat(), self._total, dict(self._per_cpu), dict(self._pressure))
