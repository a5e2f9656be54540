"""Proportion's Allocatable keeps its refusal per queue and request while the queue's
allocation holds (a backlog's pods ask again and again): the kept answer is the one it would
work out, and it ends when the allocation moves."""

from __future__ import annotations

from central.framework.conf import DEFAULT_CONF_YAML
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.scheduler import load_config
from tests.scenarios.harness import objects_of


def test_a_kept_refusal_ends_when_the_queue_s_allocation_moves():
    cache = ClusterCache()
    pods = {"ns/p1": {"group": "g1", "cpu": 2, "memory": "1Gi", "node": "n0", "phase": "Running"},
            "ns/p2": {"group": "g1", "cpu": 1, "memory": "1Gi"},
            "ns/p3": {"group": "g2", "cpu": 2, "memory": "1Gi"}}  # q2's demand: q1 deserves half the node
    for obj in objects_of({
        "queues": {"q1": {"weight": 1}, "q2": {"weight": 1}},
        "nodes": {"n0": {"cpu": 4, "memory": "8Gi"}},
        "podgroups": {"ns/g1": {"minMember": 1, "queue": "q1"}, "ns/g2": {"minMember": 1, "queue": "q2"}},
        "pods": pods,
    }):
        if obj["kind"] == "Pod":
            obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = pods[f"ns/{obj['metadata']['name']}"]["group"]
        cache.apply(obj)
    ssn = Session(cache, load_config(DEFAULT_CONF_YAML, "default"))
    try:
        proportion = next(p for tier in ssn.tiers for p in tier if p.name == "proportion")
        queue, task = ssn.queues["q1"], cache.tasks["ns/p2"]
        first = proportion.allocatable(queue, task)  # q1 deserves 2 CPUs and holds 2
        assert not first.ok and "cpu: 2 allocated + 1 requested > 2 deserved" in first.reason
        assert proportion.allocatable(queue, task) == first
        proportion.charge(cache.tasks["ns/p1"], -1)  # an eviction, say: q1 holds nothing now
        assert proportion.allocatable(queue, task).ok
        proportion.charge(cache.tasks["ns/p1"], +1)
        assert proportion.allocatable(queue, task) == first
    finally:
        ssn.rollback()
