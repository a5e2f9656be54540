"""What a cycle hands to the cluster, and in which order."""

import yaml

from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.sim.manifests import Manifests, load_into
from central.testing import RecordingSink
from tests.scenarios.harness import objects_of

CASE = yaml.safe_load("""
nodes: {n1: {cpu: 4, memory: 8Gi}, n2: {cpu: 2, memory: 8Gi}}
node_reports: {}
objects:
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 1000}
podgroups:
  ns/low: {minMember: 1, queue: default, phase: Running}
  ns/high: {minMember: 1, queue: default, priorityClassName: high}
  ns/fits: {minMember: 1, queue: default}
pods:
  ns/low-0: {group: low, cpu: 2, memory: 1Gi, node: n1}
  ns/low-1: {group: low, cpu: 2, memory: 1Gi, node: n1}
  ns/fits-0: {group: fits, cpu: 2, memory: 1Gi}
  ns/high-0: {group: high, cpu: 2, memory: 1Gi, spec: {nodeSelector: {kubernetes.io/hostname: n1}}}
""")
CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def test_cycle_hands_over_evictions_nominations_binds_and_changed_statuses():
    case = dict(CASE)
    case["nodes"]["n1"]["labels"] = {"kubernetes.io/hostname": "n1"}
    cache = ClusterCache()
    load_into(cache, Manifests(objects=[("test", o) for o in objects_of(case)]))
    sink = RecordingSink()
    run_cycle(cache, load_config(CONF), sink)
    methods = [m for m, _, _ in sink.calls]
    assert sink.of("evict") == [("ns/low-1", "PreemptionByScheduler: preempted to make room for ns/high-0")]
    assert sink.of("nominate") == [("ns/high-0", "n1")]
    assert sink.of("bind") == [("ns/fits-0", "n2")]
    assert methods.index("evict") < methods.index("nominate") < methods.index("bind") < methods.index("podgroup")
    assert {key for key, _ in sink.of("podgroup")} == {"ns/high", "ns/fits", "ns/low"}
    assert {key for key, _ in sink.of("queue")} >= {"default", "root"}

    # Nothing changed since: the next cycle writes no PodGroup status again.
    second = RecordingSink()
    run_cycle(cache, load_config(CONF), second)
    assert "ns/fits" not in {key for key, _ in second.of("podgroup")}


def test_batch_resources_are_published_once_per_change():
    from datetime import datetime, timezone

    from central.model.nodedata import NodeData

    cache = ClusterCache()
    cache.apply({"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi"}}})
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    cache.set_node_data(NodeData("n1", now, batch_cpu=3000, batch_memory=2**30))
    conf = load_config(CONF)
    first, second = RecordingSink(), RecordingSink()
    run_cycle(cache, conf, first, now)
    run_cycle(cache, conf, second, now)
    assert first.of("node_resources") == [("n1", {"kubernetes.io/batch-cpu": "3000", "kubernetes.io/batch-memory": "1073741824"})]
    assert second.of("node_resources") == []
    assert cache.table.alloc[0][cache.dims.index["kubernetes.io/batch-cpu"]] == 3000 * 1000


def test_each_plugin_open_and_close_is_timed():
    cache = ClusterCache()
    load_into(cache, Manifests(objects=[("test", o) for o in objects_of(CASE)]))
    result = run_cycle(cache, load_config(CONF))
    opened = {name for name, phase in result.plugin_timings if phase == "OnSessionOpen"}
    assert opened == {"priority", "gang", "conformance", "drf", "predicates", "proportion", "nodeorder"}
    assert ("gang", "OnSessionClose") in result.plugin_timings
    assert all(seconds >= 0 for seconds in result.plugin_timings.values())
