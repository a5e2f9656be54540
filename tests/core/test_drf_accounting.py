"""What drf counts of a job during a session: as Volcano's drf, every pod charged in it,
pipelined ones included, and nothing more once a statement is discarded."""

import numpy as np

from central.framework.session import Session
from central.model.cache import ClusterCache
from central.plugins.drf import Drf
from central.scheduler import load_config
from tests.scenarios.harness import objects_of

CONF = load_config('actions: "allocate"\ntiers:\n- plugins: [{name: drf}, {name: predicates}]\n')


def _session() -> tuple[Session, Drf]:
    cache = ClusterCache()
    for obj in objects_of({
        "nodes": {"n1": {"cpu": 8, "memory": "16Gi"}},
        "podgroups": {"ns/a": {"minMember": 1, "phase": "Inqueue"}, "ns/b": {"minMember": 1, "phase": "Inqueue"},
                      "ns/c": {"minMember": 1, "phase": "Running"}},
        "pods": {"ns/a-0": {"group": "a", "cpu": 2, "memory": "1Gi"}, "ns/b-0": {"group": "b", "cpu": 1, "memory": "1Gi"},
                 "ns/c-0": {"group": "c", "cpu": 1, "memory": "1Gi", "node": "n1", "phase": "Running"}},
    }):
        cache.apply(obj)
    ssn = Session(cache, CONF)
    return ssn, next(p for tier in ssn.tiers for p in tier if isinstance(p, Drf))


def _cpu(drf: Drf, job: str) -> float:
    return float(drf.allocated[job][0])


def test_a_pipelined_pod_counts_until_its_statement_is_discarded():
    ssn, drf = _session()
    try:
        a, b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
        assert drf.job_order(a, b) == 0  # nothing charged to either
        stmt = ssn.statement()
        stmt.pipeline(ssn.cache.tasks["ns/a-0"], ssn.cache.nodes["n1"])
        assert _cpu(drf, "ns/a") == 2000.0 and drf.job_order(a, b) == 1  # b's share is lower now
        stmt.discard()
        assert _cpu(drf, "ns/a") == 0.0 and drf.job_order(a, b) == 0
    finally:
        ssn.rollback()


def test_allocated_and_evicted_pods_count_as_the_cache_counts_them():
    ssn, drf = _session()
    try:
        stmt = ssn.statement()
        stmt.allocate(ssn.cache.tasks["ns/b-0"], ssn.cache.nodes["n1"])
        stmt.evict(ssn.cache.tasks["ns/c-0"], "test")
        assert (_cpu(drf, "ns/b"), _cpu(drf, "ns/c")) == (1000.0, 0.0)
        stmt.discard()
        assert (_cpu(drf, "ns/b"), _cpu(drf, "ns/c")) == (0.0, 1000.0)
        assert np.array_equal(drf.allocated["ns/c"], ssn.jobs["ns/c"].allocated)
    finally:
        ssn.rollback()
