"""The plugins' array forms (`node_order_on`, shared `RowState` gathers, a plan's levels
worked out several at once) decide exactly what the per-plugin path decides.

The per-plugin path is the same code with the array forms switched off (`Points` then holds
None for them): each plugin reads the table on its own, and a plan's levels are worked out
one at a time on the table charged for the moment. Random clusters of mixed node shapes
(GPUs, pod limits, taints, labels), pods running and being deleted (so future idle differs
from idle and pods get pipelined), and gangs of one or two templates with node-affinity
preferences, under configurations that weigh the scores differently.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.bench.synthetic import synthetic_cluster
from central.framework import points
from central.framework.action import ActionHandle
from central.framework.conf import DEFAULT_CONF_YAML
from central.framework.placement import _Levels
from central.framework.rowstate import RowState
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.nodetable import block, column_sums
from central.model.objects import TaskStatus
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

CONFS = {
    "default": DEFAULT_CONF_YAML,
    "binpack": DEFAULT_CONF_YAML + "  - name: binpack\n",
    "packing": DEFAULT_CONF_YAML + "  - name: binpack\n    arguments: {binpack.weight: 10, binpack.resources: "
                                   "nvidia.com/gpu, binpack.resources.nvidia.com/gpu: 3}\n",
    "mostrequested": DEFAULT_CONF_YAML.replace(
        "  - name: nodeorder\n",
        "  - name: nodeorder\n    arguments: {mostrequested.weight: 2, leastrequested.weight: 0, nodeaffinity.weight: 5}\n"),
}
SHAPES = [("500m", "1Gi", 0), ("1", "2Gi", 0), ("2", "4Gi", 0), ("3", "1Gi", 0), ("250m", "3Gi", 0), ("2", "8Gi", 1)]


def random_cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [
        {"kind": "Queue", "metadata": {"name": f"q{i}"}, "spec": {"weight": rng.randint(1, 4)}} for i in range(2)]
    nodes = rng.randint(2, 25)
    for i in range(nodes):
        gpus = rng.choice([0, 0, 0, 2, 4])
        spec: dict[str, Any] = {}
        if rng.random() < 0.1:
            spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        objects.append({"kind": "Node", "metadata": {"name": f"n{i:03d}", "labels": {"zone": f"z{i % 3}"}},
                        "spec": spec, "status": {"allocatable": {
                            "cpu": str(rng.choice([2, 4, 8, 16])), "memory": f"{rng.choice([4, 8, 16, 64])}Gi",
                            "pods": str(rng.choice([3, 8, 110])), **({"nvidia.com/gpu": str(gpus)} if gpus else {})}}})
    for i in range(rng.randint(0, nodes * 2)):  # running pods, some on their way out
        cpu, memory, _ = rng.choice(SHAPES[:-1])
        meta: dict[str, Any] = {"name": f"old-{i}", "namespace": "ns"}
        if rng.random() < 0.3:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        objects.append({"kind": "Pod", "metadata": meta, "spec": {
            "schedulerName": "volcano", "nodeName": f"n{rng.randrange(nodes):03d}",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Running"}})
    for j in range(rng.randint(1, 12)):
        size = rng.randint(1, 30)
        name = f"job{j:02d}"
        objects.append({"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns"},
                        "spec": {"minMember": size if rng.random() < 0.6 else rng.randint(1, size),
                                 "queue": f"q{rng.randrange(2)}"}, "status": {"phase": "Inqueue"}})
        shapes = [rng.choice(SHAPES) for _ in range(2)]
        extra: dict[str, Any] = {}
        if rng.random() < 0.3:
            extra["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 50), "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": [f"z{rng.randrange(3)}"]}]}}]}}
        for t in range(size):
            cpu, memory, gpu = shapes[t % 2 if rng.random() < 0.3 else 0]
            requests = {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
            objects.append({"kind": "Pod", "metadata": {
                "name": f"{name}-{t}", "namespace": "ns",
                "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": "worker"}},
                "spec": {"schedulerName": "volcano", **extra,
                         "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}]},
                "status": {"phase": "Pending"}})
    return objects


def decisions(objects: list[dict[str, Any]], conf_text: str, array_forms: bool) -> list:
    """What two cycles decide, and the tasks' statuses and nodes they leave."""
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    conf = load_config(conf_text)
    out = []
    with pytest.MonkeyPatch.context() as patch:
        if not array_forms:
            patch.setattr(points, "_array_forms", lambda plugins, method: None)
        for _ in range(2):
            result = run_cycle(cache, conf)
            out.append((result.binds, result.pipelined, result.nominated, result.pending_reasons))
            for task in list(cache.starting.values()):  # the kubelets start what was bound
                if task.uid in result.binds:
                    cache.set_status(task, task.status.RUNNING, task.node)
    out.append(sorted((t.uid, t.status, t.node) for t in cache.tasks.values()))
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(CONFS)))
def test_array_forms_decide_what_the_per_plugin_path_decides(seed, conf):
    objects = random_cluster(seed)
    assert decisions(objects, CONFS[conf], True) == decisions(objects, CONFS[conf], False)


def test_array_forms_agree_on_the_bench_cluster():
    objects = synthetic_cluster(60, 900, seed=3)
    conf = CONFS["binpack"]
    assert decisions(objects, conf, True) == decisions(objects, conf, False)


def _session(objects: list[dict[str, Any]], conf_text: str) -> tuple[ActionHandle, ClusterCache]:
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    return ActionHandle(Session(cache, load_config(conf_text))), cache


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(CONFS)), st.integers(1, 40))
def test_levels_worked_out_together_equal_levels_one_at_a_time(seed, conf, deepest):
    """A plan's rows with j more pods each: the stacked states give, level for level, the
    answers the table charged for the moment gives, and the table is left as it was."""
    handle, cache = _session(random_cluster(seed), CONFS[conf])
    placement, table = handle.placement, handle.placement.table
    before = [getattr(table, name).copy() for name in ("used", "idle", "future", "pods")]
    rng = np.random.default_rng(seed)
    for task in {t.template: t for t in cache.tasks.values() if t.status == TaskStatus.PENDING}.values():
        view = placement.view(task)
        rows = np.sort(rng.choice(placement.n, rng.integers(1, placement.n + 1), replace=False))
        stacked, single = _Levels(placement, task, view, rows, deepest), _Levels(placement, task, view, rows, deepest)
        single.stacked = False
        assert stacked.stacked
        for level in range(1, deepest + 1):
            assert stacked.at(level) == single.at(level)
    assert all(np.array_equal(getattr(table, name), was) for name, was in zip(("used", "idle", "future", "pods"), before))


def test_a_row_state_reads_what_the_table_holds():
    handle, _ = _session(synthetic_cluster(40, 200), CONFS["binpack"])
    table = handle.placement.table
    rows, cols = np.array([3, 1, 3, 39]), np.array([1, 0])
    state = RowState(table, rows)
    assert np.array_equal(state.block("used", cols), block(table.used, rows, cols))
    assert state.block("used", cols) is state.block("used", cols)  # one gathering for every reader
    assert np.array_equal(state.full("pods"), table.pods[rows])
    held = RowState(table, rows, {"pods": np.array([7, 8, 9, 10])})
    assert held.full("pods").tolist() == [7, 8, 9, 10] and np.array_equal(held.full("alloc"), table.alloc[rows])


@given(st.lists(st.lists(st.integers(0, 2**40), min_size=3, max_size=3), max_size=3000))
@settings(max_examples=50, deadline=None)
def test_column_sums_are_numpys_sums_for_resource_amounts(rows):
    table = np.array(rows, dtype=float).reshape(len(rows), 3)  # whole numbers, as millicores and bytes are
    assert column_sums(table).tolist() == table.sum(axis=0).tolist()


def test_a_plugin_without_its_own_array_form_takes_the_per_plugin_path():
    """A plugin with no array form, or a subclass that redefines node_order below the class
    that gave one, turns the array forms off for the session: its node_order is asked."""
    from central.plugins.binpack import Binpack

    class Plain:
        def node_order(self, task, rows):  # pragma: no cover - never asked here
            raise AssertionError

    class Reweighed(Binpack):
        def node_order(self, task, rows):  # pragma: no cover - never asked here
            raise AssertionError

    handle, _ = _session(synthetic_cluster(10, 20), CONFS["binpack"])
    plugins = [p for p in handle.placement.points.placement_plugins if hasattr(p, "node_order")]
    assert points._array_forms(plugins, "node_order_on") is not None
    for odd in (Plain, Reweighed):
        twin = object.__new__(odd)
        assert points._array_forms([*plugins, twin], "node_order_on") is None
