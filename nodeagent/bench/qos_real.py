"""QoS on real cgroup v1 groups: prints figures, asserts nothing.

1. CPU suppression: an offline and an online busy loop pinned to one CPU; each group's CPU over
   2 s without a quota, then with the quota CpuSuppression writes (1 CPU allocatable, threshold 40 %, floor 0.1).
2. Memory protection, before (one write of the target, as the old agent did every second) and
   after (stepwise lowering, force_empty, pinning, eviction fallback), two cases:
   - reclaimable: 64 MiB anonymous + 192 MiB clean page cache, target 128 MiB;
   - over the cap: 192 MiB anonymous (no swap), target 64 MiB.
Every group lives under /sys/fs/cgroup/<controller>/caldera-bench-*, removed at the end. Needs
root and writable cgroup v1 hierarchies.

    python -m nodeagent.bench.qos_real
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from nodeagent.cgroup.driver import CgroupWriter, open_driver
from nodeagent.cgroup.layout import CgroupLayout
from nodeagent.health import Health
from nodeagent.qos.strategies import CpuSuppressConfig, CpuSuppression, MemoryProtectConfig, MemoryProtection

ROOT = Path("/sys/fs/cgroup")
MB = 1 << 20
HOLDER = """
import os, sys, time
sys.stdin.readline()
anon = bytearray({anon})
for i in range(0, len(anon), 4096):
    anon[i] = 1
if {cache}:
    with open({path!r}, "wb") as f:
        for _ in range({cache} >> 20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
print("ready", flush=True)
time.sleep(600)
"""


def holder(group: str, anon: int, cache: int, path: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(anon=anon, cache=cache, path=path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None  # pipes, as asked
    (ROOT / "memory" / group / "cgroup.procs").write_text(str(proc.pid))
    proc.stdin.write("go\n")
    proc.stdin.flush()
    proc.stdout.readline()
    return proc


def case(name: str, anon: int, cache: int, target: int, tmp: str) -> None:
    for mode in ("before", "after"):
        group = f"caldera-bench-{uuid.uuid4().hex[:8]}"
        (ROOT / "memory" / group).mkdir()
        proc = holder(group, anon, cache, f"{tmp}/{group}.bin")
        writer = CgroupWriter(Health())
        driver = open_driver(CgroupLayout(ROOT, 1, "cgroupfs"), writer)
        start = _known(driver.memory_usage(group), f"{group}'s memory usage")
        try:
            samples = 0
            if mode == "before":  # the old agent: write the target once per second, whatever happens
                for samples in range(1, 6):
                    driver.set_memory_cap(group, target)
                ebusy = writer.results[("memory.limit_in_bytes", "failed")]
                print(f"{name}: before: {samples} writes of {target // MB} MiB, {ebusy} refused "
                      f"({errno.errorcode.get(writer.last_errno, '-')}); usage {start // MB} -> "
                      f"{_known(driver.memory_usage(group), 'memory usage') // MB} MiB, limit {_mib(driver.memory_cap(group))}")
                continue
            strategy = MemoryProtection(MemoryProtectConfig(min_bytes=target, step_bytes=64 * MB,
                                                            evict_after_samples=3), driver, group)
            while samples < 10 and strategy.limits.get(group) != target and not strategy.stuck_groups():
                samples += 1
                strategy.apply(64 << 30, 64 << 30)  # online uses it all: the target is the floor
            stuck = strategy.stuck_groups()
            usage = _known(driver.memory_usage(group), "memory usage")
            line = (f"{name}: after: {samples} samples, usage {start // MB} -> {usage // MB} MiB, "
                    f"limit {_mib(driver.memory_cap(group))}, "
                    f"force_empty {writer.results[('memory.force_empty', 'ok')]}, "
                    f"holder {'alive' if proc.poll() is None else 'killed'}")
            if stuck:
                proc.kill()  # the eviction fallback: the offender goes
                proc.wait()
                t0 = time.monotonic()
                while strategy.limits.get(group) != target and time.monotonic() - t0 < 5:
                    strategy.apply(64 << 30, 64 << 30)
                    time.sleep(0.05)
                line += (f"; stuck {stuck[group] // MB} MiB over -> evicted, then limit "
                         f"{_mib(driver.memory_cap(group))} in {time.monotonic() - t0:.2f} s")
            print(line)
        finally:
            proc.kill()
            proc.wait()
            for _ in range(100):
                try:
                    (ROOT / "memory" / group).rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def _known(value: int | None, what: str) -> int:
    """A figure the bench cannot go on without (the cgroup it made must be readable)."""
    if value is None:
        raise RuntimeError(f"cannot read {what}")
    return value


def _mib(value: int | None) -> str:
    return "none" if value is None else f"{value // MB} MiB"


def cpu_suppression() -> None:
    group = f"caldera-bench-{uuid.uuid4().hex[:8]}"
    controllers = ("cpu", "cpuacct")
    dirs = [ROOT / c / group / g for c in controllers for g in ("", "offline", "online")]
    procs = []
    try:
        for d in dirs:
            d.mkdir()
        driver = open_driver(CgroupLayout(ROOT, 1, "cgroupfs"), CgroupWriter(Health()))
        cpu = min(os.sched_getaffinity(0))
        for role in ("offline", "online"):
            proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            os.sched_setaffinity(proc.pid, {cpu})
            for c in controllers:
                (ROOT / c / group / role / "cgroup.procs").write_text(str(proc.pid))
            procs.append(proc)
        time.sleep(0.5)

        def shares() -> tuple[float, float]:
            before = [_known(driver.cpu_usage_ns(f"{group}/{g}"), f"{g} CPU usage") for g in ("offline", "online")]
            time.sleep(2.0)
            after = [_known(driver.cpu_usage_ns(f"{group}/{g}"), f"{g} CPU usage") for g in ("offline", "online")]
            offline, online = ((a - b) / 2e9 for a, b in zip(after, before))
            return offline, online

        offline0, online0 = shares()
        strategy = CpuSuppression(CpuSuppressConfig(threshold_percent=40, min_cores=0.1), driver, f"{group}/offline")
        quota = strategy.apply(1.0, online0)
        offline1, online1 = shares()
        print(f"cpu suppression (two busy loops on one CPU): without quota offline {offline0:.2f} / online "
              f"{online0:.2f} cores; quota {quota:.2f} -> offline {offline1:.2f} / online {online1:.2f} cores")
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        for d in reversed(dirs):
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def main() -> None:
    print(f"machine: load average {os.getloadavg()[0]:.2f} (shared)")
    cpu_suppression()
    swap = len(Path("/proc/swaps").read_text().splitlines()) > 1
    print(f"kernel cgroup v1 memory, swap {'on' if swap else 'off'}")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        case("reclaimable (64 MiB anon + 192 MiB cache, target 128 MiB)", 64 * MB, 192 * MB, 128 * MB, tmp)
        case("over the cap (192 MiB anon, target 64 MiB)", 192 * MB, 0, 64 * MB, tmp)


if __name__ == "__main__":
    main()
