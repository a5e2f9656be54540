from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.collect.topology import read_topology
from nodeagent.health import Health
from nodeagent.host.paths import HostPaths, parse_cpu_list
from tests.nodeagent.fakes import fake_sys, write


@pytest.mark.parametrize("text, cpus", [
    pytest.param("0-3,8,10-11\n", [0, 1, 2, 3, 8, 10, 11], id="ranges-and-singles"),
    pytest.param("5", [5], id="single"),
    pytest.param("\n", [], id="empty"),
])
def test_parse_cpu_list(text: str, cpus: list[int]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("text", ["a-b", "3-1", "-1", "0-99999999999", "1," * 40000])
def test_parse_cpu_list_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(text)


def test_two_numa_nodes_with_smt_and_an_offline_cpu(tmp_path: Path) -> None:
    health = Health()
    topo = read_topology(HostPaths(sys_root=fake_sys(tmp_path)), health)
    assert (topo.sockets, topo.cores, topo.threads) == (2, 4, 7)
    assert topo.online_cpus == [0, 1, 2, 3, 4, 5, 6] and topo.offline_cpus == [7]
    assert [n.id for n in topo.numa_nodes] == [0, 1]
    assert topo.numa_nodes[1].cpus == [4, 5, 6]
    assert topo.numa_nodes[0].distances == [10, 21]
    assert topo.numa_nodes[0].memory_total_bytes == 16384 * 1024
    assert topo.numa_nodes[0].memory_free_bytes == (4096 + 2048 + 1024) * 1024
    assert [(c.id, c.core, c.socket, c.numa, c.l3) for c in topo.cpus] == [
        (0, 0, 0, 0, 0), (1, 0, 0, 0, 0), (2, 1, 0, 0, 0), (3, 1, 0, 0, 0),  # SMT siblings share a core
        (4, 0, 1, 1, 1), (5, 0, 1, 1, 1), (6, 1, 1, 1, 1)]
    assert health.error_count() == 0


def test_l3_without_an_id_falls_back_to_the_first_sharing_cpu(tmp_path: Path) -> None:
    fake_sys(tmp_path)
    for cpu in range(8):
        (tmp_path / f"devices/system/cpu/cpu{cpu}/cache/index3/id").unlink()
        write(tmp_path, f"devices/system/cpu/cpu{cpu}/cache/index3/shared_cpu_list", "4-7\n" if cpu >= 4 else "0-3\n")
    topo = read_topology(HostPaths(sys_root=tmp_path), Health())
    assert [c.l3 for c in topo.cpus] == [0, 0, 0, 0, 4, 4, 4]


@pytest.mark.parametrize("rel, text, reason", [
    pytest.param("devices/system/cpu/cpu2/topology/core_id", "zz\n", "garbled_file", id="garbled-core-id"),
    pytest.param("devices/system/node/node1/distance", "ten twenty\n", "garbled_file", id="garbled-distance"),
    pytest.param("devices/system/node/node0/meminfo", "\xff nonsense", "garbled_file", id="meminfo-without-total"),
    pytest.param("devices/system/cpu/online", "x-y", "garbled_file", id="garbled-online"),
])
def test_garbage_in_sysfs_is_counted_not_fatal(tmp_path: Path, rel: str, text: str, reason: str) -> None:
    fake_sys(tmp_path)
    write(tmp_path, rel, text)
    health = Health()
    topo = read_topology(HostPaths(sys_root=tmp_path), health)
    assert health.errors[("topology", reason)] >= 1
    assert len(topo.numa_nodes) == 2 and topo.threads >= 7


def test_unreadable_file_is_counted(tmp_path: Path) -> None:
    fake_sys(tmp_path)
    target = tmp_path / "devices/system/node/node0/meminfo"
    target.unlink()
    target.mkdir()  # reading a directory fails even as root
    health = Health()
    read_topology(HostPaths(sys_root=tmp_path), health)
    assert health.errors[("topology", "unreadable_file")] == 1


def test_this_machines_sysfs() -> None:
    if not Path("/sys/devices/system/cpu/online").exists():
        pytest.skip("no /sys/devices/system/cpu on this machine")
    import os

    health = Health()
    topo = read_topology(HostPaths(), health)
    assert set(topo.online_cpus) >= os.sched_getaffinity(0)
    assert [c.id for c in topo.cpus] == topo.online_cpus and all(c.core >= 0 and c.socket >= 0 for c in topo.cpus)
    assert topo.threads >= 1 and topo.sockets >= 1 and 1 <= topo.cores <= topo.threads
    if Path("/sys/devices/system/node/node0").exists():
        assert topo.numa_nodes and topo.numa_nodes[0].memory_total_bytes > 0
        assert sorted(c for n in topo.numa_nodes for c in n.cpus) == topo.online_cpus
