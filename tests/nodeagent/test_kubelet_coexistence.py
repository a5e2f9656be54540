"""The kubelet (or systemd) rewrites the QoS slice under the agent.

The agent must converge back to its own value, with at most one write per file per period,
and must not write while nothing drifted (Koordinator #1734: a fight with the kubelet;
Koordinator #2047: a quota that kept growing every minute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.cgroup.driver import CgroupWriter, open_driver
from nodeagent.health import Health
from nodeagent.qos.strategies import CpuSuppressConfig, CpuSuppression, MemoryProtectConfig, MemoryProtection
from tests.nodeagent.fakes import OFFLINE, layout_with_offline_parent

CPU_FILE = {1: ("cpu/" + OFFLINE, "cpu.cfs_quota_us", "-1"), 2: (OFFLINE, "cpu.max", "max 100000")}
MEMORY_FILE = {1: ("memory/" + OFFLINE, "memory.limit_in_bytes", "9223372036854771712"),
               2: (OFFLINE, "memory.high", "max")}


def writes(writer: CgroupWriter, file: str) -> int:
    return writer.results[(file, "ok")]


@pytest.mark.parametrize("version", [1, 2])
def test_cpu_quota_converges_after_the_kubelet_resets_it(tmp_path: Path, version: int) -> None:
    writer = CgroupWriter(Health())
    strategy = CpuSuppression(CpuSuppressConfig(), open_driver(layout_with_offline_parent(tmp_path, version), writer),
                              OFFLINE)
    rel, file, kubelet_value = CPU_FILE[version]
    path = tmp_path / rel / file
    strategy.apply(8.0, 2.0)
    ours = path.read_text()
    for period in range(5):
        path.write_text(kubelet_value)  # the kubelet's sync puts its own value back
        strategy.apply(8.0, 2.0)
        assert path.read_text() == ours and writes(writer, file) == 2 + period  # one write per period
    strategy.apply(8.0, 2.0)
    strategy.apply(8.0, 2.0)
    assert writes(writer, file) == 6  # nothing drifted: nothing written


@pytest.mark.parametrize("version", [1, 2])
def test_memory_cap_converges_after_the_kubelet_resets_it(tmp_path: Path, version: int) -> None:
    writer = CgroupWriter(Health())
    driver = open_driver(layout_with_offline_parent(tmp_path, version), writer)
    strategy = MemoryProtection(MemoryProtectConfig(online_threshold_percent=80, limit_percent=90,
                                                    hysteresis_percent=5, min_bytes=1), driver, OFFLINE)
    rel, file, kubelet_value = MEMORY_FILE[version]
    path = tmp_path / rel / file
    assert strategy.apply(1000, 850) == 50
    for period in range(3):
        path.write_text(kubelet_value)
        assert strategy.apply(1000, 850) == 50
        assert driver.memory_cap(OFFLINE) == 50 and writes(writer, file) == 2 + period
    strategy.apply(1000, 850)
    assert writes(writer, file) == 4
