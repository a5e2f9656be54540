"""Pressure stall information (PSI): how much of the time work waited for CPU, memory or I/O.

Node figures come from /proc/pressure/{cpu,memory,io} (kernel 4.20+, psi enabled); pod figures
from the pod cgroup's `<resource>.pressure` (cgroup v2, or v1 kernels booted with PSI for
cgroup v1). Where a file is absent the figure is unknown (None), never zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nodeagent.health import Health
from nodeagent.host.paths import read_text

RESOURCES = ("cpu", "memory", "io")


@dataclass(frozen=True)
class Pressure:
    """One PSI file: share of time some (or all, "full") tasks stalled, averaged over 10 s and 60 s."""
    some_avg10: float
    some_avg60: float
    full_avg10: float | None  # cpu has no "full" line on older kernels
    full_avg60: float | None


def parse_pressure(text: str | None) -> Pressure | None:
    lines = {}
    for line in (text or "").splitlines()[:2]:
        kind, *pairs = line.split()
        fields = dict(p.partition("=")[::2] for p in pairs)
        try:
            lines[kind] = (float(fields["avg10"]) / 100, float(fields["avg60"]) / 100)
        except (KeyError, ValueError):
            return None
    if "some" not in lines:
        return None
    full = lines.get("full", (None, None))
    return Pressure(*lines["some"], *full)


def read_node_pressure(proc_root: Path, health: Health) -> dict[str, Pressure]:
    """What /proc/pressure has; an absent directory (PSI off) gives nothing, quietly."""
    out = {}
    for resource in RESOURCES:
        path = proc_root / "pressure" / resource
        if path.exists():
            value = parse_pressure(read_text(path, health, "psi"))
            if value is None:
                health.error("psi", "garbled_file", str(path))
            else:
                out[resource] = value
    return out
