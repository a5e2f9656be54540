"""A session at scale keeps its promises and its memory budget.

The default run is 1,000 nodes / 6,000 pods; `CALDERA_SCALE=full` runs 5,000 nodes / 30,000
pods, the same ratio. Speed is `caldera bench`'s to print (tests never assert on time); this
checks what must hold whatever the speed: every placement within the
node, every gang whole, no pod bound twice, as many pods placed as a plain first-fit places,
and the cache's memory per pod within budget."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from central.bench.session import BENCH_CONF, bytes_per_pod, floor_baseline
from central.bench.synthetic import synthetic_cluster
from central.model.cache import ClusterCache
from central.model.objects import READY_STATUSES
from central.resources.vectors import EPSILON
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.testing import RecordingSink

FULL = os.environ.get("CALDERA_SCALE") == "full"
NODES, PODS = (5000, 30000) if FULL else (1000, 6000)
BYTES_PER_POD_BUDGET = 2048  # measured 523 B at 5,000 x 30,000 (2026-11-24)


def test_a_large_session_keeps_its_invariants_and_memory_budget():
    objects = synthetic_cluster(NODES, PODS)
    assert bytes_per_pod(objects, sample=2000) <= BYTES_PER_POD_BUDGET
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    floor = floor_baseline(cache)  # None only without a C compiler
    conf, sink = load_config(BENCH_CONF, "bench configuration"), RecordingSink()
    result = run_cycle(cache, conf, sink)
    rows = len(cache.node_list)
    t = cache.table
    assert np.all(t.used[:rows] <= t.alloc[:rows] + EPSILON) and np.all(t.pods[:rows] <= t.max_pods[:rows])
    if floor is not None:  # gangs cost a little against the gang-blind compiled placement
        assert len(result.binds) >= 0.99 * floor[0]
    for job in cache.jobs.values():
        placed = sum(t.status in READY_STATUSES for t in job.tasks.values())
        assert placed == 0 or placed >= job.min_available, job.uid
    run_cycle(cache, conf, sink)  # the next session must not bind again what this one bound
    pods = Counter(pod for pod, _ in sink.of("bind"))
    assert [pod for pod, binds in pods.items() if binds > 1] == [], "pods bound twice"
    assert result.binds.keys() <= pods.keys()  # the sink saw every bind of the session
    # a pod placed twice within a session would be charged to two nodes
    assert int(t.pods[:rows].sum()) == sum(1 for task in cache.tasks.values() if task.node)
