"""Agent reports, from the stream or from `caldera agent --once` JSON, as the core's NodeData."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from central.agents import NodeReportStore
from central.agents.feed import NodeDataFeed
from central.agents.nodedata import read_node_reports, to_node_data
from central.errors import InputError
from central.model.cache import ClusterCache
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.cli import main as agent_main
from tests.builders import node
from tests.nodeagent.fakes import fake_proc, fake_sys, write


def report(node: str = "n1", sequence: int = 3) -> pb.NodeReport:
    r = pb.NodeReport(node_name=node, agent_epoch="e", sequence=sequence, full=True,
                      timestamp_unix_ms=1_767_229_200_000)
    r.resources.cpu_usage_cores.avg = 2.5
    r.resources.memory_usage_bytes.avg = 4e9
    r.resources.batch_cpu_millicores = 1250
    r.resources.batch_memory_bytes = 8 << 30
    r.topology.cpu_manager_policy, r.topology.topology_manager_policy = "static", "single-numa-node"
    r.topology.numa_nodes.add(id=0, cpus=[0, 1, 2, 3], free_cpus=[0, 2, 3], free_cpus_known=True,
                              memory_total_bytes=32 << 30, memory_free_bytes=16 << 30)
    r.topology.numa_nodes.add(id=1, cpus=[4, 5], free_cpus=[], free_cpus_known=True)  # all pinned
    r.gpus.status = "ok"
    gpu = r.gpus.gpus.add(index=0, uuid="GPU-0", numa_node=1, memory_total_bytes=40 << 30,
                          memory_used_bytes=1 << 30, healthy=True, mig_enabled=True)
    gpu.mig_devices.add(index=0, memory_total_bytes=5 << 30)
    gpu.mig_devices.add(index=1, memory_total_bytes=10 << 30)
    return r


def test_units_and_free_cpus() -> None:
    data = to_node_data(report())
    assert data.node == "n1" and data.reported_at == datetime(2026, 1, 1, 1, 0, tzinfo=timezone.utc)
    assert data.cpu_usage == 2500 and data.memory_usage == 4e9
    assert data.batch_cpu == 1250 and data.batch_memory == float(8 << 30)
    assert (data.cpu_manager_policy, data.topology_manager_policy) == ("static", "single-numa-node")
    cell, pinned = data.numa
    assert cell.cpus == {0, 1, 2, 3} and cell.free_cpus == {0, 2, 3} and cell.memory_free == float(16 << 30)
    assert pinned.free_cpus == frozenset()  # fully pinned, not "unknown"
    assert data.gpu_status == "ok" and data.gpus[0].mig_slices == (float(5 << 30), float(10 << 30))
    assert (data.gpus[0].uuid, data.gpus[0].numa) == ("GPU-0", 1)  # DRA devices find their NUMA node by it


def test_unknown_free_cpus_mean_all_cpus_and_no_resources_mean_unknown_usage() -> None:
    r = pb.NodeReport(node_name="n1", timestamp_unix_ms=1)
    r.topology.numa_nodes.add(id=0, cpus=[0, 1])
    data = to_node_data(r)
    assert data.numa[0].free_cpus == {0, 1}
    assert data.cpu_usage is None and data.memory_usage is None and data.gpu_status == "none"


def test_store_hands_out_changed_reports_only() -> None:
    store = NodeReportStore()
    store.apply(report("n1"))
    store.apply(report("n2"))
    feed, cache = NodeDataFeed(store), ClusterCache()
    for name in ("n1", "n2"):
        cache.apply(node(name, cpu=8, memory="64Gi", gpus=1))
    assert feed.sync(cache) == 2 and set(cache.node_data) == {"n1", "n2"}
    assert feed.sync(cache) == 0
    store.apply(pb.NodeReport(node_name="n2", agent_epoch="e", sequence=4, timestamp_unix_ms=1_767_229_210_000))
    assert feed.sync(cache) == 1  # a heartbeat refreshes the report time
    assert cache.node_data["n2"].reported_at == datetime(2026, 1, 1, 1, 0, 10, tzinfo=timezone.utc)
    assert cache.node_data["n2"].cpu_usage == 2500  # merged: usage kept from the full report


def test_once_json_round_trips_into_node_data(tmp_path: Path, capsys) -> None:
    write(tmp_path / "kubelet", "config.yaml", "cpuManagerPolicy: static\ntopologyManagerPolicy: restricted\n")
    write(tmp_path / "kubelet", "cpu_manager_state", json.dumps(
        {"policyName": "static", "defaultCpuSet": "0,4-6", "entries": {"u": {"c": "1-3"}}}))
    code = agent_main(["--once", "--node.name", "n9", "--paths.sys_root", str(fake_sys(tmp_path / "sys")),
                       "--paths.proc_root", str(fake_proc(tmp_path / "proc")), "--paths.cgroup_root",
                       str(tmp_path / "cg"), "--paths.kubelet_root", str(tmp_path / "kubelet"),
                       "--collect.period_s", "0.05", "--collect.gpu", "false"])
    assert code == 0
    out = tmp_path / "n9.json"
    out.write_text(capsys.readouterr().out)
    [data] = read_node_reports([str(out)])
    assert data.node == "n9" and len(data.numa) == 2
    assert data.numa[0].free_cpus == {0} and data.numa[1].free_cpus == {4, 5, 6}
    assert data.topology_manager_policy == "restricted" and data.memory_usage is not None


@pytest.mark.parametrize("text, needle", [
    pytest.param('{"sequence": "many"}', "not a node report", id="bad-value"),
    pytest.param('{"full": true}', "node_name", id="no-node"),
    pytest.param('{"full": ', "malformed JSON", id="not-json"),
])
def test_bad_json_is_an_input_error(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_node_reports([str(path)])
    assert needle in str(err.value)
