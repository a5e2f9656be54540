"""Property tests: invariants that hold for any cluster and job mix."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from central.api.resources import EPSILON
from central.framework.conf import DEFAULT_CONF_YAML, load_config
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.objects import ALLOCATED_STATUSES, TaskStatus
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
        for t in range(size):
            pods[f"ns/j{j}-{t}"] = {"group": f"j{j}", "cpu": cpu, "memory": "1Gi", **({"nvidia.com/gpu": gpu} if gpu else {})}
    return {"nodes": nodes, "queues": queues, "podgroups": podgroups, "pods": pods}


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
    shares = dict(drf.shares)
    stmt = ssn.statement()
    for task in list(cache.tasks.values()):
        node = cache.node_list[data.draw(st.integers(0, len(cache.node_list) - 1))]
        data.draw(st.sampled_from([stmt.allocate, stmt.pipeline]))(task, node)
    stmt.discard()
    for key, array in before.items():
        assert np.allclose(getattr(cache.table, key), array), key
    assert {uid: (t.status, t.node) for uid, t in cache.tasks.items()} == statuses
    assert drf.shares == shares
