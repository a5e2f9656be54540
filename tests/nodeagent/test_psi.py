"""Pressure stall information: parsing, the node's /proc/pressure, per-pod files where the kernel has them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodeagent.health import Health
from nodeagent.host.psi import parse_pressure, read_node_pressure
from tests.nodeagent.fakes import write

CPU = "some avg10=1.50 avg60=2.00 avg300=3.00 total=123\n"
MEMORY = CPU + "full avg10=0.50 avg60=0.25 avg300=0.00 total=9\n"


@pytest.mark.parametrize("text, expected", [
    pytest.param(CPU, (0.015, 0.02, None, None), id="some-only"),
    pytest.param(MEMORY, (0.015, 0.02, 0.005, 0.0025), id="some-and-full"),
    pytest.param("some avg10=x\n", None, id="garbled"),
    pytest.param("", None, id="empty"),
])
def test_parse(text: str, expected) -> None:
    value = parse_pressure(text)
    assert (value and (value.some_avg10, value.some_avg60, value.full_avg10, value.full_avg60)) == \
        (pytest.approx(expected) if expected else None)


def test_node_pressure_reads_what_is_there_and_counts_garbage(tmp_path: Path) -> None:
    write(tmp_path, "pressure/cpu", CPU)
    write(tmp_path, "pressure/memory", "nonsense\n")
    health = Health()
    assert set(read_node_pressure(tmp_path, health)) == {"cpu"}  # io absent: unknown, quietly
    assert health.errors[("psi", "garbled_file")] == 1


def test_this_machines_pressure() -> None:
    if not Path("/proc/pressure/cpu").exists():
        pytest.skip("this kernel exposes no PSI (/proc/pressure): needs 4.20+ with psi enabled")
    values = read_node_pressure(Path("/proc"), Health())
    assert "cpu" in values and 0 <= values["cpu"].some_avg10 <= 1


@pytest.mark.realcgroup
def test_per_pod_pressure_on_this_machines_cgroups() -> None:
    from nodeagent.cgroup.driver import CgroupWriter, open_driver
    from nodeagent.cgroup.layout import detect_layout

    root = Path("/sys/fs/cgroup")
    layout = detect_layout(root)
    base = root / ("cpuacct" if layout.version == 1 else "")
    if not (base / "cpu.pressure").exists() and not any(base.glob("*/cpu.pressure")):
        pytest.skip(f"no per-cgroup PSI under {base} (cgroup v{layout.version}: v1 exposes none on a mainline "
                    "kernel; per-pod pressure is reported as unknown)")
    rel = next(p.parent.name for p in base.glob("*/cpu.pressure"))
    value = open_driver(layout, CgroupWriter(Health())).pressure(rel, "cpu")
    assert value is not None and 0 <= value.some_avg10 <= 1 and os.path.exists(base / rel)
