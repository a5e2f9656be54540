"""Poison pills: one object's bad data faults that object, and everyone else still schedules.

Each case is a cluster holding the bad object and a good tenant, with the plugin that reads
the bad data enabled. The good tenant must be placed, and the bad object must carry a reason
that names the object and the annotation (the session's faults, the pod's pending reason,
the PodGroup's condition).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.errors import InputError
from central.framework.conf import Registry
from central.framework.plugin import Plugin
from central.model.cache import ClusterCache
from central.scheduler import REGISTRY, load_config
from central.scheduler.cycle import run_cycle
from tests.core.plugins import RefusingPlugin
from tests.scenarios.harness import objects_of, run_case

NODE = {"cpu": 16, "memory": "64Gi"}
GUARANTEED_4 = {"containers": [{"name": "c", "image": "x", "resources": {
    "requests": {"cpu": "4", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}}}]}
NUMA_REPORT = {"cpu_manager": "none", "numa": [{"cpus": "0-7"}, {"cpus": "8-15"}]}


def conf(*plugins: str, actions: str = "enqueue, allocate") -> str:
    return f'actions: "{actions}"\ntiers:\n- plugins: [{{name: gang}}, {", ".join(plugins)}]\n- plugins: [{{name: predicates}}]\n'


def tenants(bad_annotations: dict) -> dict:
    """Two one-pod gangs in the default queue: ns/bad (annotated) and ns/good."""
    return {"podgroups": {"ns/bad": {"minMember": 1, "annotations": bad_annotations}, "ns/good": {"minMember": 1}},
            "pods": {"ns/bad-0": {"group": "bad", "cpu": 1, "memory": "1Gi"},
                     "ns/good-0": {"group": "good", "cpu": 1, "memory": "1Gi"}}}


@pytest.mark.parametrize("plugin, annotation, value, message", [
    pytest.param("{name: sla}", "volcano.sh/sla-waiting-time", "87600000h", "", id="sla-overflow"),
    pytest.param("{name: sla}", "volcano.sh/sla-waiting-time", "soon", "expected a duration", id="sla-malformed"),
    pytest.param("{name: tdm}", "volcano.sh/jdb-min-available", "abc", "expected an integer or a percentage",
                 id="tdm-min-available"),
    pytest.param("{name: tdm}", "volcano.sh/jdb-max-unavailable", "1e3%", "expected an integer or a percentage",
                 id="tdm-max-unavailable"),
])
def test_bad_podgroup_annotation_faults_only_that_job(plugin, annotation, value, message):
    case = {"nodes": {"n1": NODE}, **tenants({annotation: value}), "config": conf(plugin)}
    result, _ = run_case(case)
    assert result.binds == {"ns/good-0": "n1"}
    where = f"PodGroup ns/bad: metadata.annotations[{annotation}]: "
    assert result.faults["PodGroup ns/bad"].startswith(where) and message in result.faults["PodGroup ns/bad"]
    assert result.pending["ns/bad-0"].startswith(f"PodGroup ns/bad cannot be scheduled: {where}")
    condition = next(c for c in result.podgroups["ns/bad"]["conditions"] if c["type"] == "Unschedulable")
    assert condition["reason"] == "InvalidSchedulingData" and condition["message"].startswith(where)
    assert result.podgroups["ns/good"]["phase"] == "Inqueue"  # bound this cycle: Running once its pod runs


@pytest.mark.parametrize("cpuset, message", [
    pytest.param("abc", "expected a list of ids like 0-3,8, got 'abc'", id="not-a-list"),
    pytest.param("0-99999999", "'0-99999999' is beyond the node's 16 ids (0-15)", id="unbounded-range"),
    pytest.param("9-3", "range '9-3' runs backwards", id="backwards"),
])
def test_bad_cpuset_on_a_starting_pod_is_reported_and_numa_placement_goes_on(cpuset, message):
    """A bound, not-yet-running pod's cpuset is read to know which CPUs it takes; a bad one
    is reported on the pod (there is nothing left to decide about it) and ignored."""
    case = {"nodes": {"n1": NODE}, "node_reports": {"n1": NUMA_REPORT},
            "pods": {"ns/placed": {"node": "n1", "phase": "Pending", "cpu": 1, "memory": "1Gi",
                                   "annotations": {"caldera.sh/cpuset": cpuset}},
                     "ns/good": {"spec": GUARANTEED_4, "annotations": {"volcano.sh/numa-topology-policy": "single-numa-node"}}},
            "config": conf("{name: numa-aware}")}
    result, _ = run_case(case)
    assert result.binds == {"ns/good": "n1"}
    assert result.annotations["ns/good"]["caldera.sh/cpuset"] == "0-3"
    assert result.faults == {"Pod ns/placed": f"Pod ns/placed: metadata.annotations[caldera.sh/cpuset]: {message}"}


def test_a_good_cpuset_still_counts_as_taken():
    case = {"nodes": {"n1": NODE}, "node_reports": {"n1": NUMA_REPORT},
            "pods": {"ns/placed": {"node": "n1", "phase": "Pending", "cpu": 1, "memory": "1Gi",
                                   "annotations": {"caldera.sh/cpuset": "0-5"}},
                     "ns/good": {"spec": GUARANTEED_4, "annotations": {"volcano.sh/numa-topology-policy": "single-numa-node"}}},
            "config": conf("{name: numa-aware}")}
    result, _ = run_case(case)
    assert result.annotations["ns/good"]["caldera.sh/cpuset"] == "8-11" and not result.faults


GPU = {"cpu": 16, "memory": "64Gi", "volcano.sh/gpu-number": 2, "volcano.sh/gpu-memory": 32000}
DEVICESHARE = "{name: deviceshare, arguments: {deviceshare.GPUSharingEnable: true, deviceshare.GPUNumberEnable: true}}"


@pytest.mark.parametrize("ids, message", [
    pytest.param("0,\u00b2", "expected a list of ids like 0-3,8, got '0,\u00b2'", id="superscript-digit"),
    pytest.param("7", "'7' is beyond the node's 2 ids (0-1)", id="no-such-card"),
])
def test_bad_unhealthy_gpu_list_takes_the_nodes_gpus_out_not_the_node(ids, message):
    case = {"nodes": {"a-odd": {**GPU, "annotations": {"volcano.sh/gpu-unhealthy-ids": ids}}, "b-fine": GPU},
            "pods": {"ns/gpu": {"cpu": 1, "volcano.sh/gpu-number": 1}, "ns/cpu": {"cpu": 1}},
            "config": conf(DEVICESHARE, actions="allocate")}
    result, _ = run_case(case)
    assert result.binds == {"ns/gpu": "b-fine", "ns/cpu": "a-odd"}  # a-odd comes first by name
    assert result.faults == {"Node a-odd": f"Node a-odd: metadata.annotations[volcano.sh/gpu-unhealthy-ids]: {message}"
                                           "; all 2 GPUs held unhealthy"}


def test_an_agent_reporting_a_card_the_node_lacks_takes_the_nodes_gpus_out_not_the_node():
    case = {"nodes": {"a-odd": GPU, "b-fine": GPU},
            "node_reports": {"a-odd": {"gpus": 4, "unhealthy_gpus": [3]}},
            "pods": {"ns/gpu": {"cpu": 1, "volcano.sh/gpu-number": 1}, "ns/cpu": {"cpu": 1}},
            "config": conf(DEVICESHARE, actions="allocate")}
    result, _ = run_case(case)
    assert result.binds == {"ns/gpu": "b-fine", "ns/cpu": "a-odd"}
    assert result.faults == {"Node a-odd": "Node a-odd: agent report gpus[].index: unhealthy GPU 3 is beyond the "
                                           "node's 2 GPUs (0-1); all 2 GPUs held unhealthy"}


def test_a_node_with_a_bad_gpu_list_is_named_in_the_gpu_pods_fit_errors():
    case = {"nodes": {"a-odd": {**GPU, "annotations": {"volcano.sh/gpu-unhealthy-ids": "x"}}},
            "pods": {"ns/gpu": {"cpu": 1, "volcano.sh/gpu-number": 1}}, "config": conf(DEVICESHARE, actions="allocate")}
    result, _ = run_case(case)
    assert not result.binds
    assert "1 node(s) didn't have 1 idle healthy GPU card(s)" in result.pending["ns/gpu"]


class NodeRefusingPlugin(Plugin):
    """Meets data it cannot confine on node a-odd: the whole node is out for the session."""

    name = "node-refusing"

    def __init__(self, option, handle):
        super().__init__(option, handle)
        for node in handle.nodes:
            if node.name == "a-odd":
                handle.fault_node(node, InputError("Node a-odd: metadata.annotations[example.com/x]", "unreadable"),
                                   self.name)


def test_a_faulted_node_takes_no_pod_and_is_named_in_the_fit_errors():
    cache = ClusterCache()
    for obj in objects_of({"nodes": {"a-odd": NODE}, "pods": {"ns/cpu": {"cpu": 1}}}):
        cache.apply(obj)
    registry = Registry(REGISTRY.actions, {**REGISTRY.plugins, "node-refusing": NodeRefusingPlugin})
    config = load_config('actions: "allocate"\ntiers:\n- plugins: [{name: predicates}, {name: node-refusing}]',
                         "test", registry)
    result = run_cycle(cache, config)
    assert not result.binds
    assert "1 node(s) had data the scheduler could not read" in result.pending_reasons["ns/cpu"]
    assert [f.reason for f in result.faults] == ["Node a-odd: metadata.annotations[example.com/x]: unreadable"]


def test_bad_gpu_index_on_a_placed_pod_is_reported():
    case = {"nodes": {"n1": GPU},
            "pods": {"ns/placed": {"node": "n1", "cpu": 1, "volcano.sh/gpu-number": 1,
                                   "annotations": {"volcano.sh/gpu-index": "0-9"}},
                     "ns/gpu": {"cpu": 1, "volcano.sh/gpu-number": 1}},
            "config": conf(DEVICESHARE, actions="allocate")}
    result, _ = run_case(case)
    assert result.binds == {"ns/gpu": "n1"}
    assert result.faults == {"Pod ns/placed": "Pod ns/placed: metadata.annotations[volcano.sh/gpu-index]: "
                                              "'0-9' is beyond the node's 2 ids (0-1)"}


def test_bad_data_met_mid_allocate_faults_the_job_and_discards_its_statement():
    case = {"nodes": {"n1": NODE},
            "podgroups": {"ns/bad": {"minMember": 2}, "ns/good": {"minMember": 1}},
            "pods": {"ns/bad-0": {"group": "bad", "cpu": 1}, "ns/bad-1": {"group": "bad", "cpu": 1},
                     "ns/good-0": {"group": "good", "cpu": 1}}}
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    registry = Registry(REGISTRY.actions, {**REGISTRY.plugins, "refusing": RefusingPlugin})
    config = load_config('actions: "allocate"\ntiers:\n- plugins: [{name: gang}, {name: predicates}, {name: refusing}]',
                         "test", registry)
    result = run_cycle(cache, config)
    assert result.binds == {"ns/good-0": "n1"}
    assert [f.reason for f in result.faults] == ["Pod ns/bad-0: metadata.annotations[example.com/x]: unreadable"]
    assert cache.table.pods[0] == 1  # nothing of ns/bad stays charged


ALL_READERS = conf("{name: sla}", "{name: tdm}", "{name: numa-aware}", DEVICESHARE)
ANNOTATION_TEXT = st.one_of(st.text(max_size=12), st.sampled_from(
    ["87600000h", "0-99999999", "99999999999999999999", "-1", "1e999", "٣", "0,\u00b2", "%", "50%", "3-1", ",,", " ",
     "1" + "0" * 400 + "%", "9" * 5000]))


@settings(max_examples=60, deadline=None)
@given(sla=ANNOTATION_TEXT, budget=ANNOTATION_TEXT, cpuset=ANNOTATION_TEXT, unhealthy=ANNOTATION_TEXT)
def test_no_annotation_value_ends_a_cycle(sla, budget, cpuset, unhealthy):
    """Whatever text these annotations hold, the cycle completes and the good tenant binds."""
    case = {"nodes": {"gpu": {**GPU, "annotations": {"volcano.sh/gpu-unhealthy-ids": unhealthy}}, "cpu": NODE},
            "node_reports": {"gpu": NUMA_REPORT, "cpu": NUMA_REPORT},
            **tenants({"volcano.sh/sla-waiting-time": sla, "volcano.sh/jdb-min-available": budget}),
            "config": ALL_READERS}
    case["pods"]["ns/placed"] = {"node": "cpu", "phase": "Pending", "cpu": 1, "annotations": {"caldera.sh/cpuset": cpuset}}
    result, _ = run_case(case)
    assert "ns/good-0" in result.binds
    for reason in result.faults.values():
        assert "metadata.annotations[" in reason and "\n" not in reason


def test_a_running_job_with_a_bad_budget_stays_running_and_gives_up_nothing():
    """Nothing is left to place: the fault is reported, the PodGroup keeps its phase, and
    tdm evicts none of its pods (the budget cannot be read)."""
    case = {"now": "2026-01-01T19:00:00Z",
            "nodes": {"lent": {"cpu": 8, "memory": "16Gi", "labels": {"volcano.sh/revocable-zone": "rz1"}}},
            "podgroups": {"ns/bad": {"minMember": 1, "phase": "Running", "annotations": {"volcano.sh/jdb-min-available": "abc"}},
                          "ns/fine": {"minMember": 1, "phase": "Running"}},
            "pods": {"ns/bad-0": {"group": "bad", "cpu": 1, "node": "lent", "annotations": {"volcano.sh/preemptable": "true"}},
                     "ns/fine-0": {"group": "fine", "cpu": 1, "node": "lent", "annotations": {"volcano.sh/preemptable": "true"}}},
            "config": 'actions: "shuffle"\ntiers:\n- plugins: [{name: gang}, {name: tdm, arguments: {tdm.revocable-zone.rz1: "09:00-18:00"}}]\n'}
    result, _ = run_case(case)
    assert result.evictions == ["ns/fine-0"]
    assert result.podgroups["ns/bad"]["phase"] == "Running"
    assert not [c for c in result.podgroups["ns/bad"]["conditions"] if c["type"] == "Unschedulable"]
    assert result.faults["PodGroup ns/bad"].startswith("PodGroup ns/bad: metadata.annotations[volcano.sh/jdb-min-available]")
