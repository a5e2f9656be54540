"""Agent reports, from the stream or from `caldera agent --once` JSON, as the core's NodeData."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from central.agents import NodeReportStore, node_data, node_data_from_json
from central.errors import InputError
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.cli import main as agent_main
from tests.nodeagent.fakes import fake_proc, fake_sys, write


def report() -> pb.NodeReport:
    r = pb.NodeReport(node_name="n1", agent_epoch="e", sequence=3, full=True, timestamp_unix_ms=1_767_229_200_000)
    r.resources.cpu_usage_cores.avg = 2.5
    r.resources.memory_usage_bytes.avg = 4e9
    r.resources.batch_cpu_cores = 1.25
    r.resources.batch_memory_bytes = 8 << 30
    r.topology.cpu_manager_policy, r.topology.topology_manager_policy = "static", "single-numa-node"
    r.topology.numa_nodes.add(id=0, cpus=[0, 1, 2, 3], exclusive_cpus=[1], memory_total_bytes=32 << 30,
                              memory_free_bytes=16 << 30)
    r.gpus.status = "ok"
    gpu = r.gpus.gpus.add(index=0, memory_total_bytes=40 << 30, memory_used_bytes=1 << 30, healthy=True,
                          mig_enabled=True)
    gpu.mig_devices.add(index=0, memory_total_bytes=5 << 30)
    gpu.mig_devices.add(index=1, memory_total_bytes=10 << 30)
    return r


def test_units_and_free_cpus() -> None:
    data = node_data(report())
    assert data.node == "n1" and data.reported_at == datetime(2026, 1, 1, 1, 0, tzinfo=timezone.utc)
    assert data.cpu_usage == 2500 and data.memory_usage == 4e9
    assert data.batch_cpu == 1250 and data.batch_memory == float(8 << 30)
    assert (data.cpu_manager_policy, data.topology_manager_policy) == ("static", "single-numa-node")
    [cell] = data.numa
    assert cell.cpus == {0, 1, 2, 3} and cell.free_cpus == {0, 2, 3} and cell.memory_free == float(16 << 30)
    assert data.gpu_status == "ok" and data.gpus[0].mig_slices == (float(5 << 30), float(10 << 30))


def test_report_without_resources_has_unknown_usage() -> None:
    data = node_data(pb.NodeReport(node_name="n1", timestamp_unix_ms=1))
    assert data.cpu_usage is None and data.memory_usage is None and data.gpu_status == "none"


def test_store_hands_out_fresh_node_data_only() -> None:
    now = [100.0]
    store = NodeReportStore(stale_after_s=30, clock=lambda: now[0])
    store.apply(report())
    data = store.node_data("n1")
    assert data is not None and abs((datetime.now(timezone.utc) - data.reported_at).total_seconds()) < 5
    now[0] += 31
    assert store.node_data("n1") is None and store.node_data("unknown") is None


def test_once_json_round_trips_into_node_data(tmp_path: Path, capsys) -> None:
    write(tmp_path / "kubelet", "config.yaml", "cpuManagerPolicy: static\ntopologyManagerPolicy: restricted\n")
    code = agent_main(["--once", "--node.name", "n9", "--paths.sys_root", str(fake_sys(tmp_path / "sys")),
                       "--paths.proc_root", str(fake_proc(tmp_path / "proc")), "--paths.cgroup_root",
                       str(tmp_path / "cg"), "--paths.kubelet_root", str(tmp_path / "kubelet"),
                       "--collect.period_s", "0.05", "--collect.gpu", "false"])
    assert code == 0
    data = node_data_from_json(json.loads(capsys.readouterr().out))
    assert data.node == "n9" and len(data.numa) == 2 and data.numa[1].cpus == {4, 5, 6}
    assert data.topology_manager_policy == "restricted" and data.memory_usage is not None


@pytest.mark.parametrize("doc, field", [
    pytest.param({"sequence": "many"}, "node report", id="bad-value"),
    pytest.param({"full": True}, "node_name", id="no-node"),
])
def test_bad_json_is_an_input_error(doc: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        node_data_from_json(doc)
    assert field in str(err.value)
