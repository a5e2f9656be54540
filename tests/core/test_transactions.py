"""A cycle is a transaction: wherever it fails, the cache is left exactly as it was.

A reference cycle over one cluster allocates (binds), pipelines, preempts (evicts) and
commits. Every task status change of that cycle is a point where a failure is injected in
turn (a RuntimeError stands for a Caldera bug; the fault injection is the one fake here).
After each failed cycle a full fingerprint of the cache (every task's status, node and
nomination, every job's counters, phase and conditions, every node's charges) must equal
the one taken before, and the next cycle must decide exactly what the reference decided.
"""

import inspect

import numpy as np
import pytest

from central.framework.session import Session
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
"""
CLUSTER = {
    "nodes": {"n1": {"cpu": 4, "memory": "16Gi"}, "n2": {"cpu": 4, "memory": "16Gi"}},
    "podgroups": {"ns/low": {"minMember": 1, "phase": "Running"}, "ns/gang": {"minMember": 2},
                  "ns/high": {"minMember": 1, "priorityClassName": "high"}, "ns/wait": {"minMember": 1}},
    "pods": {
        **{f"ns/low-{i}": {"group": "low", "cpu": 1, "node": "n1"} for i in range(4)},
        "ns/leaving": {"cpu": 1, "node": "n2", "deleting": True},  # releasing: n2's future idle > idle
        "ns/gang-0": {"group": "gang", "cpu": 1}, "ns/gang-1": {"group": "gang", "cpu": 1},
        "ns/wait-0": {"group": "wait", "cpu": 2},
        "ns/high-0": {"group": "high", "cpu": 3, "priority": 1000},
        "ns/besteffort": {"group": "gang"},
    },
    "objects": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                 "value": 1000}],
}
NOW = "2026-01-01T01:00:00+00:00"


def cluster() -> ClusterCache:
    cache = ClusterCache()
    for obj in objects_of(CLUSTER):
        cache.apply(obj)
    return cache


def fingerprint(cache: ClusterCache) -> dict:
    n, table = len(cache.node_list), cache.table
    return {
        "tasks": {uid: (t.status, t.node, t.nominated_node) for uid, t in cache.tasks.items()},
        "jobs": {uid: (j.phase, repr(j.conditions), _counted(j.counts), _counted(j.role_counts), j.ready,
                       _counted(j.role_ready), j.allocated.tolist(), j.pending_request.tolist(),
                       _counted(j.best_effort_pending),
                       {k: str(v) for k, v in j.fit_errors.items()})
                 for uid, j in cache.jobs.items()},
        "nodes": {node.name: sorted(node.tasks) for node in cache.node_list},
        "table": [getattr(table, name)[:n].tolist() for name in ("alloc", "idle", "used", "releasing", "pipelined", "pods")],
        "starting": sorted(cache.starting),
        "queues": sorted(cache.queues),
        "plugin_memory": repr(cache.plugin_memory),
        "journal": cache.journal,
    }


def _counted(counts: dict) -> dict:
    """Counters without their zero entries (a count that went up and down again reads 0 either way)."""
    return {key: n for key, n in counts.items() if n}


def reference():
    """The reference cycle's decisions, and what each status change of it was part of."""
    cache = cluster()
    steps: list[str] = []
    real = cache.set_status

    def recording(task, status, node):
        stack = inspect.stack()
        caller = stack[2] if stack[1].function == "_apply" else stack[1]  # allocate, pipeline, evict
        steps.append(f"{caller.function}-{task.uid.split('/')[1]}")
        real(task, status, node)

    cache.set_status = recording
    result = run_cycle(cache, load_config(CONF), now=_now())
    return result, steps


def _now():
    from datetime import datetime
    return datetime.fromisoformat(NOW)


REFERENCE, STEPS = reference()


def test_the_reference_cycle_does_every_kind_of_operation():
    assert REFERENCE.binds and REFERENCE.evictions and REFERENCE.nominated
    assert {step.split("-")[0] for step in STEPS} >= {"allocate", "pipeline", "evict", "commit", "discard", "close"}


def _decisions(result):
    return result.binds, result.evictions, result.nominated, result.pipelined, result.changed_podgroups


@pytest.mark.parametrize("failing_at", range(len(STEPS)), ids=[f"{i}-{s}" for i, s in enumerate(STEPS)])
def test_a_failure_at_any_status_change_leaves_the_cache_as_it_was(failing_at):
    cache = cluster()
    before = fingerprint(cache)
    real, calls = cache.set_status, []

    def failing(task, status, node):
        calls.append(task.uid)
        if len(calls) == failing_at + 1:
            raise RuntimeError("injected")
        real(task, status, node)

    cache.set_status = failing
    with pytest.raises(RuntimeError, match="injected"):
        run_cycle(cache, load_config(CONF), now=_now())
    del cache.set_status
    assert fingerprint(cache) == before
    assert _decisions(run_cycle(cache, load_config(CONF), now=_now())) == _decisions(REFERENCE)


@pytest.mark.parametrize("point", ["on_allocate", "on_deallocate", "job_ready", "job_pipelined", "on_session_close"])
def test_a_plugin_failing_anywhere_leaves_the_cache_as_it_was(point, monkeypatch):
    """A plugin bug at its k-th call, for every k that happens in the reference cycle."""
    from central.plugins.drf import Drf
    from central.plugins.gang import Gang

    owner = Drf if hasattr(Drf, point) else Gang
    original = getattr(owner, point)
    for failing_at in range(1, 40):
        cache = cluster()
        before = fingerprint(cache)
        calls = []

        def failing(self, *args, original=original, failing_at=failing_at, calls=calls):
            calls.append(1)
            if len(calls) == failing_at:
                raise RuntimeError("injected")
            return original(self, *args)

        monkeypatch.setattr(owner, point, failing)
        try:
            run_cycle(cache, load_config(CONF), now=_now())
            failed = False
        except RuntimeError:
            failed = True
        monkeypatch.setattr(owner, point, original)
        if not failed:
            assert failing_at > 1, f"{point} was never called"
            break
        assert fingerprint(cache) == before, f"{point} failing at call {failing_at}"


def test_a_session_that_fails_to_open_leaves_the_cache_as_it_was(monkeypatch):
    from central.plugins.proportion import Proportion

    cache = ClusterCache()  # no root or default queue yet: opening creates them
    for obj in objects_of(CLUSTER):
        cache.apply(obj)
    cache.queues.clear()
    before = fingerprint(cache)

    def broken(self, option, session):
        raise RuntimeError("injected")

    monkeypatch.setattr(Proportion, "__init__", broken)
    with pytest.raises(RuntimeError):
        Session(cache, load_config(CONF))
    assert fingerprint(cache) == before


def test_rollback_restores_node_charges_exactly():
    """Charges are sums of integers (millicores, bytes) in float64: undone, they are exact."""
    cache = cluster()
    idle = cache.table.idle.copy()
    ssn = Session(cache, load_config(CONF))
    stmt = ssn.statement()
    for uid in ("ns/gang-0", "ns/gang-1", "ns/wait-0"):
        stmt.allocate(cache.tasks[uid], cache.nodes["n2"])
    stmt.commit()
    ssn.rollback()
    assert np.array_equal(cache.table.idle, idle)


def test_a_rolled_back_shuffle_forgets_tdm_s_evict_time(monkeypatch):
    """tdm remembers when it last evicted (its period outlives a session): a cycle that
    evicted and then failed must not leave that clock running."""
    from datetime import datetime

    from central.framework.session import Session as Real

    case = {"nodes": {"lent": {"cpu": 8, "memory": "16Gi", "labels": {"volcano.sh/revocable-zone": "rz1"}}},
            "pods": {"ns/a": {"cpu": 1, "node": "lent", "annotations": {"volcano.sh/preemptable": "true"}}}}
    conf = load_config('actions: "shuffle"\ntiers:\n- plugins: [{name: tdm, arguments: {tdm.revocable-zone.rz1: "09:00-18:00"}}]\n')
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    before = fingerprint(cache)

    def close_broken(self):
        raise RuntimeError("injected")

    monkeypatch.setattr(Real, "close", close_broken)
    with pytest.raises(RuntimeError):
        run_cycle(cache, conf, now=datetime.fromisoformat("2026-01-01T19:00:00+00:00"))
    assert fingerprint(cache) == before
    monkeypatch.undo()
    assert run_cycle(cache, conf, now=datetime.fromisoformat("2026-01-01T19:00:05+00:00")).evictions == {
        "ns/a": "Shuffle: evicted by the scheduler (tdm: revocable zone rz1 is outside its window 09:00-18:00)"}
