"""Node data is untrusted input: a report out of range, or claiming more than its Node has,
faults that node alone; every other node keeps scheduling."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone

import pytest
from google.protobuf import json_format

from central.agents.bounds import checked_node_data
from central.agents.feed import NodeDataFeed
from central.agents.nodedata import to_node_data
from central.agents.store import NodeReportStore
from central.cli import main
from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML
from central.framework.faults import AGENT_REPORT
from central.model.cache import ClusterCache
from central.model.parse import parse_node
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from nodeagent.api.v1 import agent_pb2 as pb
from tests.builders import node, pod

NOW_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: the feed's clock in these tests
INT64_MAX = 2**63 - 1


def report(name: str = "n1", sequence: int = 1) -> pb.NodeReport:
    """A sane report of an 8-CPU, 2-NUMA-node, 1-GPU node of 64 GiB."""
    r = pb.NodeReport(node_name=name, agent_epoch="e", sequence=sequence, full=True, timestamp_unix_ms=NOW_MS)
    r.resources.cpu_usage_cores.avg = 2.0
    r.resources.memory_usage_bytes.avg = 4 << 30
    r.resources.batch_cpu_millicores, r.resources.batch_memory_bytes = 3000, 8 << 30
    r.topology.cpu_manager_policy = "static"
    r.topology.numa_nodes.add(id=0, cpus=[0, 1, 2, 3], free_cpus=[2, 3], free_cpus_known=True,
                              memory_total_bytes=32 << 30, memory_free_bytes=16 << 30)
    r.topology.numa_nodes.add(id=1, cpus=[4, 5, 6, 7], memory_total_bytes=32 << 30)
    r.gpus.status = "ok"
    r.gpus.gpus.add(index=0, memory_total_bytes=40 << 30, memory_used_bytes=1 << 30, healthy=True)
    return r


NODE = node("n1", cpu=8, memory="64Gi", gpus=1)


def _cells(r: pb.NodeReport, count: int) -> None:
    del r.topology.numa_nodes[:]
    for i in range(count):
        r.topology.numa_nodes.add(id=i)


def _set(path: str, value: object) -> Callable[[pb.NodeReport], None]:
    def change(r: pb.NodeReport) -> None:
        *outer, last = path.split(".")
        msg = r
        for part in outer:
            msg = getattr(msg, part)
        setattr(msg, last, value)
    return change


BAD = {
    "timestamp_int64_max": (_set("timestamp_unix_ms", INT64_MAX), "timestamp_unix_ms"),
    "timestamp_before_1970": (_set("timestamp_unix_ms", -1), "timestamp_unix_ms"),
    "timestamp_an_hour_ahead": (_set("timestamp_unix_ms", NOW_MS + 3_600_000), "ahead of the scheduler's clock"),
    "more_cpus_than_the_node": (lambda r: r.topology.numa_nodes[1].cpus.extend(range(8, 16)), "more CPUs"),
    "900000_cpus_in_one_cell": (lambda r: r.topology.numa_nodes[0].cpus.extend(range(8, 900_008)), "more CPUs"),
    "a_cpu_in_two_cells": (lambda r: r.topology.numa_nodes[1].cpus.__setitem__(0, 0), "in another cell"),
    "a_cpu_id_past_nr_cpus": (lambda r: r.topology.numa_nodes[1].cpus.__setitem__(0, 1 << 20), "CPU id"),
    "free_cpus_not_in_the_cell": (lambda r: r.topology.numa_nodes[0].free_cpus.append(7), "free_cpus"),
    "more_numa_nodes_than_cpus": (lambda r: _cells(r, 9), "NUMA nodes"),
    "a_numa_id_twice": (lambda r: setattr(r.topology.numa_nodes[1], "id", 0), ".id"),
    "more_memory_than_the_node": (lambda r: setattr(r.topology.numa_nodes[1], "memory_total_bytes", 33 << 30),
                                  "memory_total_bytes"),
    "more_gpus_than_the_node": (lambda r: r.gpus.gpus.add(index=1, memory_total_bytes=1 << 30), "GPUs on a Node"),
    "gpu_used_more_than_total": (lambda r: setattr(r.gpus.gpus[0], "memory_used_bytes", 41 << 30), "memory_used"),
    "too_many_mig_slices": (lambda r: [r.gpus.gpus[0].mig_devices.add(index=i) for i in range(17)], "MIG"),
    "batch_cpu_over_capacity": (_set("resources.batch_cpu_millicores", 8001), "batch_cpu"),
    "batch_memory_over_capacity": (_set("resources.batch_memory_bytes", 2**64 - 1), "batch_memory"),
    "usage_not_a_number": (_set("resources.cpu_usage_cores.avg", float("nan")), "cpu_usage"),
    "usage_negative": (_set("resources.memory_usage_bytes.avg", -1.0), "memory_usage"),
    "a_policy_name_of_a_megabyte": (_set("topology.cpu_manager_policy", "x" * (1 << 20)), "longer than"),
}


def now() -> datetime:
    return datetime.fromtimestamp(NOW_MS / 1000, tz=timezone.utc)


def test_a_sane_report_fits_its_node() -> None:
    data = checked_node_data(report(), parse_node(NODE), now())
    assert data.batch_cpu == 3000 and len(data.numa) == 2 and len(data.gpus) == 1


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_report_out_of_bounds_is_refused_naming_node_and_field(case: str) -> None:
    change, field = BAD[case]
    r = report()
    change(r)
    with pytest.raises(InputError) as err:
        checked_node_data(r, parse_node(NODE), now())
    assert str(err.value).startswith("Node n1: agent report") and field in str(err.value)


def test_the_list_lengths_are_checked_before_the_conversion_walks_them() -> None:
    r = report()
    r.topology.numa_nodes[0].cpus.extend(range(8, 900_008))
    started = time.perf_counter()
    with pytest.raises(InputError):
        checked_node_data(r, parse_node(NODE), now())
    assert time.perf_counter() - started < 0.05  # the conversion alone takes about 0.4 s


def test_the_capacity_not_the_allocatable_bounds_a_report() -> None:
    """The kubelet reserves CPUs for the system: the agent still sees all of them."""
    reserved = {**NODE, "status": {"capacity": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
                                   "allocatable": {"cpu": "7500m", "memory": "60Gi", "nvidia.com/gpu": "1"}}}
    assert len(checked_node_data(report(), parse_node(reserved), now()).numa) == 2


def test_a_timestamp_no_datetime_holds_is_an_input_error_not_a_crash() -> None:
    r = report()
    r.timestamp_unix_ms = INT64_MAX
    with pytest.raises(InputError, match="timestamp_unix_ms"):
        to_node_data(r)


def scheduling_cache() -> tuple[ClusterCache, NodeReportStore, NodeDataFeed]:
    cache, store = ClusterCache(), NodeReportStore()
    for name in ("n1", "n2"):
        cache.apply(node(name, cpu=8, memory="64Gi", gpus=1))
    return cache, store, NodeDataFeed(store, clock=lambda: NOW_MS / 1000)


def pending(name: str) -> dict:
    return pod(name, "ml", cpu="1")


def test_a_bad_report_faults_its_node_alone_and_a_good_one_lifts_the_fault() -> None:
    cache, store, feed = scheduling_cache()
    bad = report("n1")
    bad.timestamp_unix_ms = INT64_MAX
    store.apply(bad)
    store.apply(report("n2"))
    assert feed.sync(cache) == 2
    assert "n1" not in cache.node_data and "n2" in cache.node_data
    for i in range(4):
        cache.apply(pending(f"p{i}"))
    conf = load_config(DEFAULT_CONF_YAML, "default")
    result = run_cycle(cache, conf, now=now())
    assert set(result.binds.values()) == {"n2"} and len(result.binds) == 4  # n2 keeps scheduling
    [fault] = [f for f in result.faults if f.kind == "Node"]
    assert (fault.key, fault.source) == ("n1", AGENT_REPORT) and "timestamp_unix_ms" in fault.reason
    assert feed.sync(cache) == 0  # refused once, not again every cycle
    store.apply(report("n1", sequence=2))
    assert feed.sync(cache) == 1 and "n1" in cache.node_data
    cache.apply(pending("later"))
    result = run_cycle(cache, conf, now=now())
    assert not [f for f in result.faults if f.kind == "Node"]


def test_a_refused_report_withdraws_the_batch_resources_it_offered() -> None:
    cache, store, feed = scheduling_cache()
    store.apply(report("n1"))
    feed.sync(cache)
    assert cache.take_batch_changes()["n1"]["kubernetes.io/batch-cpu"] == "3000"
    lying = report("n1", sequence=2)
    lying.gpus.gpus.add(index=1)
    store.apply(lying)
    feed.sync(cache)
    assert cache.take_batch_changes()["n1"] == {"kubernetes.io/batch-cpu": "0", "kubernetes.io/batch-memory": "0"}


def test_a_report_waits_for_its_node() -> None:
    cache, store = ClusterCache(), NodeReportStore()
    feed = NodeDataFeed(store, clock=lambda: NOW_MS / 1000)
    store.apply(report("n1"))
    assert feed.sync(cache) == 0 and not cache.node_data
    cache.apply(NODE)
    assert feed.sync(cache) == 1 and "n1" in cache.node_data


def test_simulate_refuses_a_report_with_a_time_out_of_range(tmp_path, capsys) -> None:
    bad = report("n1")
    bad.timestamp_unix_ms = INT64_MAX
    (tmp_path / "n1.json").write_text(json.dumps(json_format.MessageToDict(bad, preserving_proto_field_name=True)))
    (tmp_path / "cluster.yaml").write_text(json.dumps(NODE))
    code = main(["simulate", "--manifests", str(tmp_path / "cluster.yaml"), "--node-reports", str(tmp_path / "n1.json")])
    assert code == 2
    assert "timestamp_unix_ms" in capsys.readouterr().err
