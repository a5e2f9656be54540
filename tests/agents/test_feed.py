"""Agent reports into the scheduler's cache: conversion and change-only feeding."""

import json

from google.protobuf import json_format

from central.agents.feed import NodeDataFeed
from central.agents.nodedata import read_node_reports, to_node_data
from central.agents.store import NodeReportStore
from central.cli import main
from central.model.cache import ClusterCache
from nodeagent.api.v1 import agent_pb2 as pb
from tests.builders import node


def report(node: str, sequence: int, full: bool = True) -> pb.NodeReport:
    msg = pb.NodeReport(node_name=node, agent_epoch="e1", sequence=sequence, timestamp_unix_ms=1_767_225_600_000, full=full)
    if full:
        msg.resources.CopyFrom(pb.Resources(cpu_usage_cores=pb.WindowStat(avg=2.5), memory_usage_bytes=pb.WindowStat(avg=2**30),
                                            batch_cpu_millicores=3000, batch_memory_bytes=2**31))
        msg.topology.CopyFrom(pb.Topology(cpu_manager_policy="static", topology_manager_policy="single-numa-node", numa_nodes=[
            pb.NumaNode(id=0, cpus=list(range(8)), free_cpus=[6, 7], free_cpus_known=True, memory_total_bytes=2**34),
            pb.NumaNode(id=1, cpus=list(range(8, 16)), memory_total_bytes=2**34)]))
        msg.gpus.CopyFrom(pb.Gpus(status="ok", gpus=[pb.Gpu(index=0, memory_total_bytes=2**34, healthy=True),
                                                     pb.Gpu(index=1, memory_total_bytes=2**34, healthy=False)]))
    return msg


def test_conversion_keeps_what_placement_needs():
    data = to_node_data(report("n1", 1))
    assert (data.cpu_manager_policy, data.topology_manager_policy) == ("static", "single-numa-node")
    assert data.numa[0].free_cpus == frozenset({6, 7})
    assert data.numa[1].free_cpus == frozenset(range(8, 16))  # not told: all of its CPUs
    assert data.cpu_usage == 2500 and data.memory_usage == 2**30
    assert (data.batch_cpu, data.batch_memory) == (3000, 2**31)
    assert [g.healthy for g in data.gpus] == [True, False]
    assert data.reported_at.year == 2026


def test_feed_converts_only_what_changed():
    store, cache = NodeReportStore(), ClusterCache()
    feed = NodeDataFeed(store)
    for name in ("n1", "n2"):
        cache.apply(node(name, cpu=16, memory="64Gi", gpus=2))
    store.apply(report("n1", 1))
    store.apply(report("n2", 1))
    assert feed.sync(cache) == 2
    assert feed.sync(cache) == 0
    store.apply(report("n1", 2, full=False))  # a heartbeat
    assert feed.sync(cache) == 1
    assert cache.node_data["n1"].cpu_usage == 2500  # sections survive the delta


def test_the_agents_json_reads_back(tmp_path):
    path = tmp_path / "n1.json"
    path.write_text(json.dumps(json_format.MessageToDict(report("n1", 1), preserving_proto_field_name=True)))
    [data] = read_node_reports([str(tmp_path)])
    assert data.node == "n1" and data.numa[0].free_cpus == frozenset({6, 7})


def test_simulate_judges_a_report_fresh_or_stale_by_its_own_time(tmp_path, capsys):
    """The report (taken 2026-01-01T00:00:00Z) shows n1 at 2.5 of 3 cpu, above usage's 80%:
    ten seconds later it keeps the pod off n1; ten minutes later it is stale and ignored."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "n1.json").write_text(
        json.dumps(json_format.MessageToDict(report("n1", 1), preserving_proto_field_name=True)))
    (tmp_path / "cluster.yaml").write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "3", memory: 8Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec: {schedulerName: volcano, containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
""")
    (tmp_path / "conf.yaml").write_text('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: predicates}, {name: usage}]\n')
    binds = {}
    for now in ("2026-01-01T00:00:10Z", "2026-01-01T00:10:00Z"):
        code = main(["simulate", "--manifests", str(tmp_path / "cluster.yaml"), "--config", str(tmp_path / "conf.yaml"),
                     "--node-reports", str(tmp_path / "reports"), "--now", now, "--output", "json"])
        assert code == 0
        binds[now] = json.loads(capsys.readouterr().out)["binds"]
    assert binds == {"2026-01-01T00:00:10Z": {}, "2026-01-01T00:10:00Z": {"ns/p": "n1"}}
