"""One cgroup driver interface, a v1 and a v2 implementation, and a guarded, counted writer.

Logical knob        v1 file                                   v2 file
CPU usage           cpuacct/cpuacct.usage (ns)                cpu.stat usage_usec
memory working set  memory.usage_in_bytes - total_inactive_file   memory.current - inactive_file
CPU quota           cpu/cpu.cfs_quota_us (+ cfs_period_us)    cpu.max "quota period" | "max period"
memory cap          memory/memory.limit_in_bytes (-1 = none)  memory.high ("max" = none)
memory usage        memory/memory.usage_in_bytes              memory.current
reclaim             memory/memory.force_empty                 (memory.high reclaims by itself)
online protection   (none)                                    memory.low
CPU burst           cpu/cpu.cfs_burst_us                      cpu.max.burst
pressure (PSI)      cpuacct/{cpu,memory,io}.pressure if the   {cpu,memory,io}.pressure
                    kernel exposes PSI on v1 (psi=1, cgroup1)

cgroupspy is v1-only, walks the whole hierarchy when built and swallows read errors, so the
drivers read and write files directly; tests use cgroupspy as an independent v1 reader.
Every write goes through `CgroupWriter`, which refuses protected (online) cgroups and
counts each write by file and result for the `nodeagent_cgroup_writes_total` metric.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Protocol

from nodeagent.cgroup.layout import CgroupLayout
from nodeagent.health import Health
from nodeagent.host.paths import read_text
from nodeagent.host.psi import Pressure, parse_pressure

NAME = "cgroup"
MIN_QUOTA_US = 1000  # the kernel refuses CFS quotas below 1 ms


class WriteRefused(Exception):
    """A write that validation or the protection guard stopped before it reached the kernel."""


class CgroupWriter:
    def __init__(self, health: Health) -> None:
        self.health = health
        self.results: Counter[tuple[str, str]] = Counter()  # (file, ok|invalid|protected|failed)
        self.last_errno = 0  # of the last failed kernel write (EBUSY: v1 cannot reclaim below usage)
        self._protected: tuple[Path, ...] = ()

    def protect(self, dirs: list[Path]) -> None:
        """Online pods' cgroups: never written, nor anything below them."""
        self._protected = tuple(d.resolve() for d in dirs)

    def write(self, directory: Path, file: str, value: str, valid: bool) -> bool:
        target = directory.resolve()
        if any(target == p or p in target.parents for p in self._protected):
            self.results[(file, "protected")] += 1
            self.health.error(NAME, "protected_write", f"{directory}/{file}")
            return False
        if not valid:
            self.results[(file, "invalid")] += 1
            self.health.error(NAME, "invalid_write", f"{directory}/{file} <- {value!r}")
            return False
        try:
            (directory / file).write_text(value)
        except OSError as exc:
            self.results[(file, "failed")] += 1
            self.last_errno = exc.errno or 0
            self.health.error(NAME, "write_failed", f"{directory / file} <- {value}: {exc.strerror or exc}")
            return False
        self.results[(file, "ok")] += 1
        return True


class CgroupDriver(Protocol):
    layout: CgroupLayout
    writer: CgroupWriter  # every write goes through it, counted

    def cpu_usage_ns(self, rel: str) -> int | None: ...
    def memory_working_set(self, rel: str) -> int | None: ...
    def cpu_quota_cores(self, rel: str) -> float | None: ...
    def set_cpu_quota(self, rel: str, cores: float | None) -> bool: ...
    def memory_cap(self, rel: str) -> int | None: ...
    def set_memory_cap(self, rel: str, limit: int | None) -> bool: ...
    def memory_cap_file(self, rel: str) -> Path: ...
    def memory_usage(self, rel: str) -> int | None: ...
    def reclaim(self, rel: str) -> bool: ...
    def cpu_burst_cores(self, rel: str) -> float | None: ...
    def set_cpu_burst(self, rel: str, cores: float) -> bool: ...
    def set_memory_low(self, rel: str, limit: int) -> bool: ...
    def pressure(self, rel: str, resource: str) -> Pressure | None: ...


def _stat_fields(text: str | None) -> dict[str, int]:
    fields = {}
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            fields[key] = int(value)
    return fields


class _Base:
    def __init__(self, layout: CgroupLayout, writer: CgroupWriter) -> None:
        self.layout, self.writer = layout, writer
        self.health = writer.health

    def _read(self, controller: str, rel: str, file: str) -> str | None:
        return read_text(self.layout.path(controller, rel) / file, self.health, NAME)

    def _int(self, controller: str, rel: str, file: str) -> int | None:
        text = self._read(controller, rel, file)
        if text is None:
            return None
        try:
            return int(text.split()[0])
        except (ValueError, IndexError):
            self.health.error(NAME, "garbled_file", f"{rel}/{file}: {text[:40]!r}")
            return None

    def pressure(self, rel: str, resource: str) -> Pressure | None:
        """None where the kernel has no PSI for this cgroup (v1 without psi=1): unknown."""
        path = self.layout.path("cpuacct" if self.layout.version == 1 else "cpu", rel) / f"{resource}.pressure"
        if not path.exists():
            return None
        return parse_pressure(read_text(path, self.health, NAME))

    def _quota_us(self, cores: float | None, period: int) -> tuple[int, bool]:
        if cores is None:
            return -1, True
        quota = int(cores * period)
        return quota, quota >= MIN_QUOTA_US


class V1Driver(_Base):
    def cpu_usage_ns(self, rel: str) -> int | None:
        return self._int("cpuacct", rel, "cpuacct.usage")

    def memory_working_set(self, rel: str) -> int | None:
        usage = self._int("memory", rel, "memory.usage_in_bytes")
        inactive = _stat_fields(self._read("memory", rel, "memory.stat")).get("total_inactive_file", 0)
        return None if usage is None else max(0, usage - inactive)

    def cpu_quota_cores(self, rel: str) -> float | None:
        quota = self._int("cpu", rel, "cpu.cfs_quota_us")
        period = self._int("cpu", rel, "cpu.cfs_period_us")
        if quota is None or period is None or quota < 0 or period <= 0:
            return None
        return quota / period

    def set_cpu_quota(self, rel: str, cores: float | None) -> bool:
        period = self._int("cpu", rel, "cpu.cfs_period_us") or 100_000
        quota, valid = self._quota_us(cores, period)
        return self.writer.write(self.layout.path("cpu", rel), "cpu.cfs_quota_us", str(quota), valid)

    def memory_cap(self, rel: str) -> int | None:
        limit = self._int("memory", rel, "memory.limit_in_bytes")
        # v1 reports "no limit" as a huge page-aligned number rather than -1.
        return None if limit is None or limit < 0 or limit >= 1 << 62 else limit

    def set_memory_cap(self, rel: str, limit: int | None) -> bool:
        value = -1 if limit is None else limit
        return self.writer.write(
            self.layout.path("memory", rel), "memory.limit_in_bytes", str(value), limit is None or limit > 0
        )

    def memory_cap_file(self, rel: str) -> Path:
        return self.layout.path("memory", rel) / "memory.limit_in_bytes"

    def memory_usage(self, rel: str) -> int | None:
        return self._int("memory", rel, "memory.usage_in_bytes")

    def reclaim(self, rel: str) -> bool:
        """Drops what the group can give back (page cache) without touching its limit."""
        return self.writer.write(self.layout.path("memory", rel), "memory.force_empty", "0", True)

    def cpu_burst_cores(self, rel: str) -> float | None:
        burst = self._int("cpu", rel, "cpu.cfs_burst_us")
        period = self._int("cpu", rel, "cpu.cfs_period_us")
        return None if burst is None or not period or period <= 0 else burst / period

    def set_memory_low(self, rel: str, limit: int) -> bool:
        return False  # v1 has no memory.low

    def set_cpu_burst(self, rel: str, cores: float) -> bool:
        period = self._int("cpu", rel, "cpu.cfs_period_us") or 100_000
        return self.writer.write(self.layout.path("cpu", rel), "cpu.cfs_burst_us", str(int(cores * period)),
                                 cores >= 0)


class V2Driver(_Base):
    def cpu_usage_ns(self, rel: str) -> int | None:
        usec = _stat_fields(self._read("cpu", rel, "cpu.stat")).get("usage_usec")
        return None if usec is None else usec * 1000

    def memory_working_set(self, rel: str) -> int | None:
        current = self._int("memory", rel, "memory.current")
        inactive = _stat_fields(self._read("memory", rel, "memory.stat")).get("inactive_file", 0)
        return None if current is None else max(0, current - inactive)

    def _cpu_max(self, rel: str) -> tuple[str, int] | None:
        text = self._read("cpu", rel, "cpu.max")
        parts = (text or "").split()
        if len(parts) != 2 or not parts[1].isdigit() or not (parts[0] == "max" or parts[0].isdigit()):
            if text is not None:
                self.health.error(NAME, "garbled_file", f"{rel}/cpu.max: {text[:40]!r}")
            return None
        return parts[0], int(parts[1])

    def cpu_quota_cores(self, rel: str) -> float | None:
        current = self._cpu_max(rel)
        if current is None or current[0] == "max" or current[1] <= 0:
            return None
        return int(current[0]) / current[1]

    def set_cpu_quota(self, rel: str, cores: float | None) -> bool:
        current = self._cpu_max(rel)
        period = current[1] if current else 100_000
        quota, valid = self._quota_us(cores, period)
        value = f"{'max' if quota < 0 else quota} {period}"
        return self.writer.write(self.layout.path("cpu", rel), "cpu.max", value, valid)

    def memory_cap(self, rel: str) -> int | None:
        text = (self._read("memory", rel, "memory.high") or "").strip()
        return int(text) if text.isdigit() else None

    def set_memory_cap(self, rel: str, limit: int | None) -> bool:
        value = "max" if limit is None else str(limit)
        return self.writer.write(
            self.layout.path("memory", rel), "memory.high", value, limit is None or limit > 0
        )

    def memory_cap_file(self, rel: str) -> Path:
        return self.layout.path("memory", rel) / "memory.high"

    def memory_usage(self, rel: str) -> int | None:
        return self._int("memory", rel, "memory.current")

    def reclaim(self, rel: str) -> bool:
        return True  # above memory.high the kernel reclaims and throttles by itself

    def set_memory_low(self, rel: str, limit: int) -> bool:
        return self.writer.write(self.layout.path("memory", rel), "memory.low", str(limit), limit >= 0)

    def cpu_burst_cores(self, rel: str) -> float | None:
        burst = self._int("cpu", rel, "cpu.max.burst")
        current = self._cpu_max(rel)
        return None if burst is None or current is None or current[1] <= 0 else burst / current[1]

    def set_cpu_burst(self, rel: str, cores: float) -> bool:
        current = self._cpu_max(rel)
        period = current[1] if current else 100_000
        return self.writer.write(self.layout.path("cpu", rel), "cpu.max.burst", str(int(cores * period)), cores >= 0)


def open_driver(layout: CgroupLayout, writer: CgroupWriter) -> CgroupDriver:
    return V2Driver(layout, writer) if layout.version == 2 else V1Driver(layout, writer)
