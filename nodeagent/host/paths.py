"""Where the host's /sys, /proc, cgroup tree and kubelet state are mounted, plus tolerant file readers.

In the DaemonSet the host's trees are mounted under /host; on a node in host mode or in tests
they are anything else. Readers return None on a missing, unreadable or garbled file and count
the failure in `Health`: one bad file never takes a whole collector down.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nodeagent.health import Health


@dataclass(frozen=True)
class HostPaths:
    sys_root: Path = Path("/sys")
    proc_root: Path = Path("/proc")
    cgroup_root: Path = Path("/sys/fs/cgroup")
    kubelet_root: Path = Path("/var/lib/kubelet")


def read_text(path: Path, health: Health, collector: str) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError as exc:
        health.error(collector, "missing_file", exc)
    except OSError as exc:
        health.error(collector, "unreadable_file", exc)
    except UnicodeDecodeError as exc:
        health.error(collector, "garbled_file", f"{path}: {exc}")
    return None


def read_int(path: Path, health: Health, collector: str) -> int | None:
    text = read_text(path, health, collector)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        health.error(collector, "garbled_file", f"{path}: {text[:40]!r}")
        return None


MAX_CPUS = 8192  # the kernel's NR_CPUS ceiling: bounds what a cpulist (or an annotation) can expand to


def parse_cpu_list(text: str, limit: int = MAX_CPUS) -> list[int]:
    """Kernel cpulist format: "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]; raises ValueError.

    Bounded: every id must be below `limit` (the node's CPUs where known, else MAX_CPUS),
    checked before a range is expanded, and text longer than a full cpulist is refused, so a
    hostile annotation such as "0-99999999999" costs nothing (it cost 170 MB once)."""
    if len(text) > 8 * MAX_CPUS:
        raise ValueError(f"cpu list of {len(text)} characters is too long")
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.strip().isascii() or not (hi or lo).strip().isascii():
            raise ValueError(f"bad cpu range {part!r}")
        first, last = int(lo), int(hi or lo)
        if first < 0 or last < first or last >= limit:
            raise ValueError(f"bad cpu range {part!r} (CPUs 0-{limit - 1})")
        cpus.update(range(first, last + 1))
    return sorted(cpus)
