from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.cgroup.driver import CgroupWriter, open_driver
from nodeagent.cgroup.layout import detect_layout
from nodeagent.collect.node_usage import NodeUsageCollector
from nodeagent.collect.pod_usage import PodUsageCollector
from nodeagent.collect.window import Window
from nodeagent.health import Health
from nodeagent.host.paths import HostPaths
from nodeagent.pods import PodInfo
from tests.nodeagent.fakes import fake_pod_cgroup, fake_proc, write

UID = "0b3c5f1e-1234-4abc-9def-0123456789ab"


@settings(deadline=None, max_examples=50)
@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=50))
def test_window_stat_bounds(values: list[float]) -> None:
    window = Window(20)
    for v in values:
        window.add(v)
    kept = values[-20:]
    stat = window.stat()
    assert stat.last == kept[-1]
    assert min(kept) - 1e-6 <= stat.avg <= max(kept) + 1e-6
    assert stat.p95 in kept and stat.p95 >= sorted(kept)[len(kept) // 2]


def test_node_usage_from_fake_proc(tmp_path: Path) -> None:
    health = Health()
    collector = NodeUsageCollector(HostPaths(proc_root=fake_proc(tmp_path)), health, window=10)
    collector.sample(now=100.0)
    fake_proc(tmp_path, busy_ticks=150, idle_ticks=50)  # 1.5 s busy in 1 s: 1.5 cores
    collector.sample(now=101.0)
    usage = collector.usage()
    assert usage.cpu_cores.last == pytest.approx(1.5)
    assert usage.per_cpu_cores == {0: pytest.approx(1.5), 3: pytest.approx(0.0)}
    assert usage.memory_total_bytes == 16_000_000 * 1024
    assert usage.memory_bytes.last == (16_000_000 - 10_000_000) * 1024
    assert health.error_count() == 0


def test_node_usage_survives_a_missing_proc(tmp_path: Path) -> None:
    health = Health()
    collector = NodeUsageCollector(HostPaths(proc_root=tmp_path / "absent"), health, window=10)
    collector.sample()
    assert health.errors[("node_usage", "read_failed")] == 1
    assert collector.usage().cpu_cores is None and collector.usage().memory_bytes is None  # unknown, not 0
    assert health.failing == {"node_usage": "read_failed"}


LAYOUTS = [
    pytest.param(1, "cgroupfs", "Burstable", "cpu/kubepods/burstable/pod" + UID, id="v1-cgroupfs-burstable"),
    pytest.param(1, "cgroupfs", "Guaranteed", "cpu/kubepods/pod" + UID, id="v1-cgroupfs-guaranteed"),
    pytest.param(1, "systemd", "BestEffort",
                 "cpu/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
                 + UID.replace("-", "_") + ".slice", id="v1-systemd-besteffort"),
    pytest.param(2, "systemd", "Burstable",
                 "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                 + UID.replace("-", "_") + ".slice", id="v2-systemd-burstable"),
    pytest.param(2, "systemd", "Guaranteed",
                 "kubepods.slice/kubepods-pod" + UID.replace("-", "_") + ".slice", id="v2-systemd-guaranteed"),
    pytest.param(2, "cgroupfs", "BestEffort", "kubepods/besteffort/pod" + UID, id="v2-cgroupfs-besteffort"),
]


@pytest.mark.parametrize("version, driver, qos_class, cpu_dir", LAYOUTS)
def test_pod_usage_in_every_layout(tmp_path: Path, version: int, driver: str, qos_class: str, cpu_dir: str) -> None:
    if version == 2:
        write(tmp_path, "cgroup.controllers", "cpu memory\n")
    base = tmp_path if version == 2 else tmp_path / "cpu"
    (base / ("kubepods.slice" if driver == "systemd" else "kubepods")).mkdir(parents=True)
    layout = detect_layout(tmp_path)
    assert (layout.version, layout.driver) == (version, driver)
    pod = PodInfo("ns", "p", UID, qos_class=qos_class, qos_level="BE")
    rel = layout.pod_dir(UID, qos_class)
    assert layout.path("cpu", rel) == tmp_path / cpu_dir
    health = Health()
    collector = PodUsageCollector(open_driver(layout, CgroupWriter(health)), window=5)
    fake_pod_cgroup(layout, rel, cpu_ns=1_000_000_000, memory=500, inactive=200)
    collector.sample([pod], now=10.0)
    fake_pod_cgroup(layout, rel, cpu_ns=3_000_000_000, memory=900, inactive=100)
    collector.sample([pod], now=12.0)
    [usage] = collector.usage()
    assert usage.cpu_cores.last == pytest.approx(1.0)
    assert usage.memory_bytes.last == 800 and usage.memory_bytes.avg == 550
    assert health.error_count() == 0
    collector.sample([], now=13.0)
    assert collector.usage() == []


def test_pod_without_cgroup_is_counted_not_fatal(tmp_path: Path) -> None:
    health = Health()
    layout = detect_layout(tmp_path, version=1, driver="cgroupfs")
    collector = PodUsageCollector(open_driver(layout, CgroupWriter(health)), window=5)
    collector.sample([PodInfo("ns", "gone", UID)])
    assert health.errors[("cgroup", "missing_file")] >= 1
    assert os.path.exists(tmp_path) and collector.usage()[0].cpu_cores is None  # unknown, not 0
    assert collector.usage()[0].memory_bytes is None
