"""Runs of identical pods (`Statement.allocate_run`) decide exactly what allocating the same
pods one at a time decides: the same binds, pending reasons, PodGroup statuses, queue shares,
faults and cache. Each case runs the same cluster twice, batch placement on both times, with
runs and with every run cut to its first pod."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.actions import allocate
from central.bench.synthetic import synthetic_cluster
from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML, Registry
from central.framework.extension import AllocationEvents
from central.framework.plugin import Plugin
from central.framework.statement import Statement
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.resources.vectors import add_repeated, repeats_exactly
from central.scheduler import REGISTRY, load_config
from central.scheduler.cycle import run_cycle

BINPACK = DEFAULT_CONF_YAML + "  - name: binpack\n"


class RunRefusing(Plugin, AllocationEvents):
    """Refuses the allocation of one pod, in runs too: the statement must undo the run."""

    name = "run-refusing"
    events_in_runs = True

    def on_allocate(self, task):
        if task.uid == "bench/job-00000-5":
            raise InputError(f"Pod {task.uid}: metadata.annotations[example.com/x]", "unreadable")

    def on_deallocate(self, task):
        pass


def capped(objects: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The bench's cluster with capabilities on some queues, so Allocatable stops runs midway."""
    rng = random.Random(seed)
    for obj in objects:
        if obj["kind"] == "Queue" and rng.random() < 0.6:
            obj["spec"]["capability"] = {"cpu": str(rng.randint(4, 40)), "memory": f"{rng.randint(16, 200)}Gi"}
    return objects


def cycles(objects: list[dict[str, Any]], conf_text: str, runs: bool, registry: Registry = REGISTRY) -> tuple[list, int]:
    """What two cycles decide and the cache they leave, and how many pods went in runs of more than one."""
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    conf = load_config(conf_text, "test", registry)
    in_runs = 0
    allocate_run = Statement.allocate_run

    def counted(self, tasks, nodes):
        nonlocal in_runs
        in_runs += len(tasks) if len(tasks) > 1 else 0
        allocate_run(self, tasks, nodes)

    out: list = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Statement, "allocate_run", counted)
        if not runs:
            patch.setattr(allocate, "_run_after", lambda *args: [])
        for _ in range(2):
            result = run_cycle(cache, conf)
            podgroups = {uid: {**status, "conditions": [{k: v for k, v in c.items()
                                                         if k not in ("transitionID", "lastTransitionTime")}
                                                        for c in status["conditions"]]}
                         for uid, status in result.podgroups.items()}
            out.append((result.binds, result.pipelined, result.pending_reasons, podgroups, result.queues,
                        [f.reason for f in result.faults]))
            for task in list(cache.starting.values()):
                if task.uid in result.binds:
                    cache.set_status(task, task.status.RUNNING, task.node)
    table = cache.table
    out.append(sorted((t.uid, t.status, t.node) for t in cache.tasks.values()))
    out.append([array.tolist() for array in (table.used, table.idle, table.future, table.pods)])
    out.append(sorted((job.uid, job.ready, sorted(job.counts.items()), job.allocated.tolist(),
                       job.pending_request.tolist()) for job in cache.jobs.values()))
    return out, in_runs


def test_runs_are_used_and_decide_what_one_by_one_decides_on_the_bench_cluster():
    objects = synthetic_cluster(60, 900, seed=3)
    one_by_one, _ = cycles(objects, BINPACK, runs=False)
    batched, in_runs = cycles(objects, BINPACK, runs=True)
    assert batched == one_by_one
    assert in_runs > 600


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_queue_capabilities_cut_runs_where_one_by_one_is_refused(seed):
    objects = capped(synthetic_cluster(40, 500, seed=seed % 1000), seed)
    one_by_one, _ = cycles(objects, BINPACK, runs=False)
    batched, _ = cycles(objects, BINPACK, runs=True)
    assert batched == one_by_one


def test_a_refused_run_is_undone_and_refused_where_one_by_one_refuses():
    objects = synthetic_cluster(30, 300, seed=3)
    registry = Registry(REGISTRY.actions, {**REGISTRY.plugins, "run-refusing": RunRefusing})
    conf = BINPACK + "  - name: run-refusing\n"
    one_by_one, _ = cycles(objects, conf, runs=False, registry=registry)
    batched, in_runs = cycles(objects, conf, runs=True, registry=registry)
    assert batched == one_by_one
    assert in_runs > 0
    assert one_by_one[0][5] == ["Pod bench/job-00000-5: metadata.annotations[example.com/x]: unreadable"]


FIGURES = st.one_of(st.integers(-10**6, 10**6).map(float), st.floats(-1e6, 1e6, allow_nan=False),
                    st.sampled_from([0.1, 1 / 3, 2.0**53, -(2.0**52) + 1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(FIGURES, FIGURES), min_size=1, max_size=4), st.integers(1, 70), st.sampled_from([1, -1]))
def test_adding_a_request_repeatedly_at_once_gives_the_figures_one_by_one_gives(pairs, times, sign):
    base = np.array([b for b, _ in pairs])
    req = np.array([r for _, r in pairs])
    one_by_one = base.copy()
    for _ in range(times):
        one_by_one += sign * req
    at_once = base.copy()
    add_repeated(at_once, req, times, sign)
    assert at_once.tobytes() == one_by_one.tobytes()
    if not (req % 1).any() and not (base % 1).any() and np.abs(base).max() + np.abs(req).max() * times < 2**52:
        assert repeats_exactly(base, req, times)


class RunBreaking(Plugin, AllocationEvents):
    """A plugin bug (not bad data) while a run is told: the cycle fails and rolls back."""

    name = "run-breaking"
    events_in_runs = True

    def on_allocate(self, task):
        if task.uid == "bench/job-00000-5":
            raise RuntimeError("a bug")

    def on_deallocate(self, task):
        pass


def test_a_cycle_failing_while_a_run_is_told_leaves_the_cache_as_it_was():
    cache = ClusterCache()
    for obj in synthetic_cluster(30, 300, seed=3):
        cache.apply(obj)

    def state():
        table = cache.table
        return ([(t.uid, t.status, t.node) for t in cache.tasks.values()],
                [(j.uid, j.ready, _counted(j.counts), _counted(j.role_counts), _counted(j.role_ready),
                  j.allocated.tolist(), j.pending_request.tolist()) for j in cache.jobs.values()],
                [array.tolist() for array in (table.used, table.idle, table.future, table.pods)],
                sorted(cache.starting), [sorted(node.tasks) for node in cache.node_list])

    before = state()
    registry = Registry(REGISTRY.actions, {**REGISTRY.plugins, "run-breaking": RunBreaking})
    with pytest.raises(RuntimeError, match="a bug"):
        run_cycle(cache, load_config(BINPACK + "  - name: run-breaking\n", "test", registry))
    assert state() == before


def _counted(counts: dict) -> list:
    """Counters without their zero entries (a count that went up and down again reads 0 either way)."""
    return sorted((key, n) for key, n in counts.items() if n)


def test_a_run_changes_its_jobs_version_as_one_by_one_allocation_does():
    """Closes and validity answers are kept per job until its version changes; a run changes it."""
    cache = ClusterCache()
    for obj in synthetic_cluster(10, 40, seed=1):
        cache.apply(obj)
    job = next(j for j in cache.jobs.values() if j.count(TaskStatus.PENDING) >= 2)
    tasks = [t for t in job.tasks.values() if t.status == TaskStatus.PENDING]
    tasks = [t for t in tasks if t.resreq is tasks[0].resreq][:2]
    mark = cache.version_mark()
    cache.allocate_run(tasks, [cache.node_list[0]] * len(tasks))
    assert job.version > mark
