"""Property tests: invariants that hold for any cluster and job mix."""

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from central.framework.conf import DEFAULT_CONF_YAML
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.objects import ALLOCATED_STATUSES, TaskStatus
from central.resources.quantity import parse_quantity
from central.resources.vectors import EPSILON
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

BINPACK_CONF = DEFAULT_CONF_YAML + "  - name: binpack\n"


@st.composite
def clusters(draw):
    nodes = {f"n{i}": {"cpu": draw(st.integers(1, 16)), "memory": f"{draw(st.integers(1, 32))}Gi",
                       **({"nvidia.com/gpu": draw(st.integers(1, 4))} if draw(st.booleans()) else {})}
             for i in range(draw(st.integers(1, 6)))}
    queues = {f"q{i}": {"weight": draw(st.integers(1, 4)),
                        **({"capability": {"cpu": draw(st.integers(1, 20))}} if draw(st.booleans()) else {})}
              for i in range(draw(st.integers(1, 3)))}
    podgroups, pods = {}, {}
    for j in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 6))
        podgroups[f"ns/j{j}"] = {"minMember": draw(st.integers(1, size)), "queue": draw(st.sampled_from(sorted(queues)))}
        cpu = draw(st.sampled_from(["250m", "500m", "1", "2", "3"]))
        gpu = draw(st.sampled_from([0, 0, 1]))
        init = draw(st.sampled_from([None, None, "1", "4", "8"]))  # an init container's cpu
        for t in range(size):
            pods[f"ns/j{j}-{t}"] = {"group": f"j{j}", "cpu": cpu, "memory": "1Gi", **({"nvidia.com/gpu": gpu} if gpu else {}),
                                    **({"spec": {"initContainers": [{"name": "init", "image": "x", "resources": {
                                        "requests": {"cpu": init}}}]}} if init else {})}
    return {"nodes": nodes, "queues": queues, "podgroups": podgroups, "pods": pods}


def admitted_cpu(spec: dict) -> float:
    """What the kubelet admits a shorthand pod with, in millicores: the larger of its container
    and its init container (an oracle written apart from the scheduler's own formula)."""
    init = (spec.get("spec") or {}).get("initContainers") or [{"resources": {"requests": {"cpu": "0"}}}]
    return max(float(parse_quantity(str(spec["cpu"]))), float(parse_quantity(init[0]["resources"]["requests"]["cpu"]))) * 1000


def load(case) -> ClusterCache:
    cache = ClusterCache()
    for kind in ("Queue", "Node", "PodGroup", "Pod"):
        for obj in objects_of(case):
            if obj["kind"] == kind:
                cache.apply(obj)
    return cache


def node_usage(cache: ClusterCache) -> dict[str, np.ndarray]:
    usage = {name: cache.dims.zeros() for name in cache.nodes}
    for task in cache.tasks.values():
        if task.node and task.status in ALLOCATED_STATUSES | {TaskStatus.RELEASING}:
            usage[task.node] += task.resreq
    return usage


@settings(max_examples=60, deadline=None)
@given(clusters(), st.sampled_from([DEFAULT_CONF_YAML, BINPACK_CONF]))
def test_scheduling_invariants(case, conf_text):
    cache = load(case)
    conf = load_config(conf_text)
    for _ in range(2):
        run_cycle(cache, conf)
        # No node is charged beyond its allocatable, and the table agrees with the tasks.
        for name, used in node_usage(cache).items():
            node = cache.nodes[name]
            assert np.all(used <= cache.table.alloc[node.index] + EPSILON)
            admitted = sum(admitted_cpu(case["pods"][uid]) for uid, t in cache.tasks.items()
                           if t.node == name and t.status in ALLOCATED_STATUSES | {TaskStatus.RELEASING})
            assert admitted <= cache.table.alloc[node.index][0] + EPSILON, f"{name}: the kubelet would refuse a pod"
            assert np.allclose(cache.table.used[node.index], used)
            assert np.allclose(cache.table.pipelined[node.index], 0)  # pipelines are session-only
        for job in cache.jobs.values():
            placed = job.count(*ALLOCATED_STATUSES)
            assert placed == 0 or placed >= job.min_available, f"{job.uid}: partial gang {placed}/{job.min_available}"
            assert job.count(TaskStatus.ALLOCATED, TaskStatus.PIPELINED) == 0  # nothing left half-done
        per_queue = {}
        for job in cache.jobs.values():
            per_queue[job.queue] = per_queue.get(job.queue, 0) + job.allocated[0]
        for name, cpu in per_queue.items():
            cap = cache.queues[name].capability.get("cpu")
            assert cap is None or cpu <= cap + EPSILON, f"queue {name} over its capability"
        for task in cache.tasks.values():  # binds become running, as the cluster would
            if task.status == TaskStatus.BINDING:
                cache.set_status(task, TaskStatus.RUNNING, task.node)


@settings(max_examples=40, deadline=None)
@given(clusters(), st.data())
def test_discard_restores_the_session_exactly(case, data):
    cache = load(case)
    before = {k: getattr(cache.table, k).copy() for k in ("used", "idle", "future", "pipelined", "releasing", "pods")}
    statuses = {uid: (t.status, t.node) for uid, t in cache.tasks.items()}
    ssn = Session(cache, load_config(DEFAULT_CONF_YAML))
    drf = next(p for tier in ssn.tiers for p in tier if p.name == "drf")
    shares = {uid: drf._share(uid) for uid in ssn.jobs}
    stmt = ssn.statement()
    for task in list(cache.tasks.values()):
        node = cache.node_list[data.draw(st.integers(0, len(cache.node_list) - 1))]
        data.draw(st.sampled_from([stmt.allocate, stmt.pipeline]))(task, node)
    stmt.discard()
    for key, array in before.items():
        assert np.allclose(getattr(cache.table, key), array), key
    assert {uid: (t.status, t.node) for uid, t in cache.tasks.items()} == statuses
    assert {uid: drf._share(uid) for uid in ssn.jobs} == shares


EVICTING_CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


@st.composite
def busy_clusters(draw):
    """Clusters whose nodes already run gangs of mixed priority, with more work pending."""
    case = draw(clusters())
    case["objects"] = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"p{v}"}, "value": v}
                       for v in (1, 10, 100)]
    free = {name: int(spec["cpu"]) * 1000 for name, spec in case["nodes"].items()}
    for j in range(draw(st.integers(2, 10))):
        size = draw(st.integers(1, 6))
        group = f"run{j}"
        case["podgroups"][f"ns/{group}"] = {"minMember": draw(st.integers(1, size)), "queue": draw(st.sampled_from(sorted(case["queues"]))),
                                            "phase": "Running", "priorityClassName": draw(st.sampled_from(["p1", "p10"]))}
        for t in range(size):
            node = draw(st.sampled_from(sorted(free)))
            if free[node] >= 1000:
                free[node] -= 1000
                case["pods"][f"ns/{group}-{t}"] = {"group": group, "cpu": 1, "memory": "1Mi", "node": node}
    for spec in case["podgroups"].values():
        spec.setdefault("priorityClassName", draw(st.sampled_from(["p1", "p100", "p100"])))
    return case


@settings(max_examples=60, deadline=None)
@given(busy_clusters())
def test_preemption_and_reclaim_invariants(case):
    cache = load_with_priorities(case)
    conf = load_config(EVICTING_CONF)
    for _ in range(3):
        ready_before = {uid: job.ready_num for uid, job in cache.jobs.items()}
        result = run_cycle(cache, conf)
        for name, used in node_usage(cache).items():
            assert np.all(used <= cache.table.alloc[cache.nodes[name].index] + EPSILON)
        for uid, job in cache.jobs.items():
            ready = job.ready_num
            was = ready_before.get(uid, 0)
            if was >= job.min_available and 0 < ready < job.min_available:
                raise AssertionError(f"{uid}: preemption left a partial gang {ready}/{job.min_available}")
        event(f"evicted: {bool(result.evictions)}")
        if result.evictions:  # no wasted kills: someone was placed where they were made
            assert result.pipelined or result.binds
        for uid in result.evictions:
            namespace, name = uid.split("/", 1)
            cache.delete("Pod", namespace, name)
        for task in cache.tasks.values():
            if task.status == TaskStatus.BINDING:
                cache.set_status(task, TaskStatus.RUNNING, task.node)


def load_with_priorities(case) -> ClusterCache:
    cache = ClusterCache()
    for kind in ("PriorityClass", "Queue", "Node", "PodGroup", "Pod"):
        for obj in objects_of(case):
            if obj["kind"] == kind:
                cache.apply(obj)
    return cache


HIERARCHY_CONF = """
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""


@st.composite
def queue_trees(draw):
    """A random two-level queue tree with capabilities, and jobs in its leaves."""
    case = draw(clusters())
    parents = {f"p{i}": {"capability": {"cpu": draw(st.integers(2, 24))}} for i in range(draw(st.integers(1, 2)))}
    leaves = {}
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.sampled_from(sorted(parents)))
        cap = draw(st.one_of(st.none(), st.integers(1, parents[parent]["capability"]["cpu"])))
        leaves[f"l{i}"] = {"parent": parent, **({"capability": {"cpu": cap}} if cap else {})}
    case["queues"] = {**parents, **leaves}
    for spec in case["podgroups"].values():
        spec["queue"] = draw(st.sampled_from(sorted(leaves)))
    return case


@settings(max_examples=50, deadline=None)
@given(queue_trees())
def test_hierarchical_capability_is_never_exceeded(case):
    cache = load(case)
    conf = load_config(HIERARCHY_CONF)
    for _ in range(2):
        run_cycle(cache, conf)
        used = {name: 0.0 for name in cache.queues}
        for job in cache.jobs.values():
            name = job.queue
            while name in cache.queues:  # the job's queue and every ancestor
                used[name] += job.allocated[0]
                name = cache.queues[name].parent
        for name, cpu in used.items():
            cap = cache.queues[name].capability.get("cpu")
            assert cap is None or cpu <= cap + EPSILON, f"queue {name} uses {cpu} of capability {cap}"
        for task in cache.tasks.values():
            if task.status == TaskStatus.BINDING:
                cache.set_status(task, TaskStatus.RUNNING, task.node)
