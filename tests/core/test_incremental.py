"""What the cache and sessions keep across cycles equals what a fresh start computes.

Sessions lean on state the cache updates change by change instead of recomputing it every
cycle: per-job ready counts (overall and per role), minResources vectors, the index of pods
with required anti-affinity, and the node index kept while no Node changes. A random
sequence of object changes (Nodes replaced and removed, PodGroups and Pods created, updated
and deleted, a new resource name that re-lays every vector) interleaved with scheduling
cycles (whose binds and evictions are written back to the objects, as the sink would)
must leave that state exactly as a cache fed only the final objects has it.
"""

import copy
import itertools
import random
from dataclasses import fields
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.framework import placement as placement_module
from central.framework import session as session_module
from central.framework.action import ActionHandle
from central.framework.closing import CycleResult
from central.framework.conf import DEFAULT_CONF_YAML, Registry
from central.framework.extension import SessionClose
from central.framework.nodeindex import NodeIndex
from central.framework.plugin import Plugin
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.objects import READY_STATUSES
from central.model.pgstatus import semantic
from central.scheduler import REGISTRY, load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

CONF = load_config(DEFAULT_CONF_YAML)
NODES, GROUPS, PODS = ["n0", "n1", "n2"], ["g0", "g1", "g2"], [f"p{i}" for i in range(8)]
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}]}}

node_op = st.builds(lambda name, cpu, zone, tainted, cordoned: ("node", name, {
    "cpu": cpu, "memory": "8Gi", "labels": {"zone": zone, "kubernetes.io/hostname": name},
    **({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]} if tainted else {}),
    **({"unschedulable": True} if cordoned else {})}),
    st.sampled_from(NODES), st.integers(1, 8), st.sampled_from(["a", "b"]), st.booleans(), st.booleans())
group_op = st.builds(lambda name, size, roles, min_cpu: ("podgroup", name, {
    "minMember": size, **({"minTaskMember": {"ps": 1, "worker": size - 1}} if roles and size > 1 else {}),
    **({"minResources": {"cpu": str(min_cpu)}} if min_cpu else {})}),
    st.sampled_from(GROUPS), st.integers(1, 3), st.booleans(), st.sampled_from([0, 1, 2]))
pod_op = st.builds(lambda name, group, role, cpu, node, phase, deleting, anti, extra: ("pod", name, {
    "group": group, "role": role, "labels": {"app": "solo" if anti else "web"},
    **({"cpu": cpu, "memory": "1Gi"} if cpu else {}),
    **({"node": node, "phase": phase} if node else {}), **({"deleting": True} if deleting else {}),
    **({"spec": {"affinity": ANTI}} if anti else {}), **({"example.com/fpga": 1} if extra else {})}),
    st.sampled_from(PODS), st.sampled_from(GROUPS), st.sampled_from(["ps", "worker"]),
    st.sampled_from([0, "500m", 1, 2]), st.sampled_from([None, None, *NODES]),
    st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]), st.booleans(), st.booleans(),
    st.integers(0, 9).map(lambda n: n == 0))
delete_op = st.tuples(st.just("delete"), st.sampled_from(["Node", "PodGroup", "Pod"]), st.integers(0, 7))
operations = st.lists(st.one_of(node_op, group_op, pod_op, delete_op, st.just(("cycle",))), max_size=40)


class Cluster:
    """The objects as the API server holds them, fed to the cache as an informer would."""

    def __init__(self) -> None:
        self.cache = ClusterCache()
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.put(("queue", "default", {}))

    def put(self, op: tuple) -> None:
        kind, name, spec = op
        key = f"ns/{name}" if kind != "node" and kind != "queue" else name
        obj = objects_of({f"{kind}s": {key: dict(spec)}})[0]
        if kind == "pod":
            obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = spec["group"]
        self.objects[(obj["kind"], key)] = obj
        self.cache.apply(obj)

    def delete(self, kind: str, pick: int) -> None:
        keys = sorted(k for k in self.objects if k[0] == kind)
        if keys:
            key = keys[pick % len(keys)]
            obj = self.objects.pop(key)
            self.cache.delete(kind, obj["metadata"].get("namespace"), obj["metadata"]["name"])

    def cycle(self) -> None:
        self.write_back(run_cycle(self.cache, CONF))

    def write_back(self, result: CycleResult) -> None:
        for key, node in result.binds.items():  # what the sink writes, seen back through the informer
            pod = self.objects[("Pod", key)]
            pod["spec"]["nodeName"] = node
            self.cache.apply(pod)
        for key in result.evictions:
            pod = self.objects[("Pod", key)]
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
            self.cache.apply(pod)

    def fresh(self) -> ClusterCache:
        cache = ClusterCache()
        for kind in ("Queue", "Node", "PodGroup", "Pod"):
            for (k, _), obj in sorted(self.objects.items()):
                if k == kind:
                    cache.apply(obj)
        return cache


def kept_state(cache: ClusterCache) -> dict[str, Any]:
    """The state kept change by change, keyed by names (rows may be laid out differently, and
    a resource name seen once stays a dimension: vectors compare by their non-zero entries)."""
    names = cache.dims.names

    def vec(values: np.ndarray) -> dict[str, float]:
        return {n: v for n, v in zip(names, values.tolist()) if v}
    jobs = {}
    for uid, job in cache.jobs.items():
        jobs[uid] = {
            "tasks": sorted((t.uid, t.status.name, t.node) for t in job.tasks.values()),
            "counts": {s.name: n for s, n in job.counts.items() if n},
            "roles": {k: n for k, n in job.role_counts.items() if n},
            "ready": job.ready, "role_ready": {k: n for k, n in job.role_ready.items() if n},
            "best_effort": {k: n for k, n in job.best_effort_pending.items() if n},
            "allocated": vec(job.allocated), "pending": vec(job.pending_request), "min": vec(job.min_request),
        }
    table = cache.table
    return {
        "jobs": jobs,
        "anti_affine": sorted(cache.anti_affine),
        "nodes": {n.name: {col: vec(getattr(table, col)[n.index]) for col in ("alloc", "used", "idle", "releasing", "pipelined", "future")}
                  | {"pods": int(table.pods[n.index]), "tasks": sorted(n.tasks)}
                  for n in cache.node_list},
        "starting": sorted(cache.starting),
    }


def index_view(index: NodeIndex, nodes: list) -> dict[str, Any]:
    return {n.name: (index.label("zone")[n.index], index.label("metadata.name")[n.index],
                     bool(index.unschedulable[n.index]), index.taint_sets[index.taint_group[n.index]])
            for n in nodes}


def recounted(cache: ClusterCache) -> dict[str, tuple[int, dict[str, int]]]:
    """Ready counts straight from the tasks: an oracle apart from the cache's bookkeeping."""
    out = {}
    for uid, job in cache.jobs.items():
        roles: dict[str, int] = {}
        for task in job.tasks.values():
            if task.status in READY_STATUSES:
                roles[task.role] = roles.get(task.role, 0) + 1
        out[uid] = (sum(roles.values()), roles)
    return out


@settings(max_examples=150, deadline=None)
@given(operations)
def test_kept_state_equals_a_fresh_cache(ops):
    cluster = Cluster()
    for op in ops:
        if op[0] == "cycle":
            cluster.cycle()
        elif op[0] == "delete":
            cluster.delete(op[1], op[2])
        else:
            cluster.put(op)
    cache, fresh = cluster.cache, cluster.fresh()
    kept = kept_state(cache)
    assert kept == kept_state(fresh)
    assert {uid: (j["ready"], j["role_ready"]) for uid, j in kept["jobs"].items()} == recounted(cache)
    for uid, job in cache.jobs.items():
        assert np.array_equal(job.min_request, cache.dims.vector(job.min_resources or {})), uid
    kept_index = Session(cache, CONF).handle.node_index
    cache_rollback = cache.journal  # the session above only opened: nothing to undo but the journal
    cache.journal = None
    assert cache_rollback == []
    assert index_view(kept_index, cache.node_list) == index_view(NodeIndex(fresh.node_list), fresh.node_list)


def test_the_node_index_is_kept_until_a_node_changes():
    cluster = Cluster()
    for name in NODES:
        cluster.put(("node", name, {"cpu": 4, "memory": "8Gi", "labels": {"zone": "a"}}))
    cache = cluster.cache

    def index() -> NodeIndex:
        ssn = Session(cache, CONF)
        ssn.rollback()
        return ssn.handle.node_index

    first = index()
    cluster.put(("pod", "p0", {"group": "g0", "cpu": 1, "node": "n0"}))  # pods do not touch it
    assert index() is first
    cluster.put(("node", "n1", {"cpu": 4, "memory": "8Gi", "labels": {"zone": "b"}}))
    second = index()
    assert second is not first and second.label("zone")[cache.nodes["n1"].index] == "b"
    cluster.delete("Node", 0)
    assert index() is not second and index().n == 2


def test_a_node_that_comes_back_is_charged_for_the_pods_still_bound_to_it():
    cluster = Cluster()
    node = ("node", "n0", {"cpu": 4, "memory": "8Gi"})
    cluster.put(node)
    cluster.put(("pod", "p0", {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Running"}))
    cluster.delete("Node", 0)
    cluster.put(node)  # the kubelet registers the Node again; its pod never left
    cache = cluster.cache
    assert cache.table.used[cache.nodes["n0"].index].tolist()[:2] == [1000.0, 2**30]
    assert sorted(cache.nodes["n0"].tasks) == ["ns/p0"]


def _forget_kept(cache: ClusterCache) -> None:
    """Every job changed, as far as anything kept across sessions can tell: all is worked out anew."""
    for job in cache.jobs.values():
        cache.touch(job)


def _cycle_result(cluster: Cluster, number: int, monkeypatch: Any) -> dict[str, Any]:
    """One cycle at a fixed clock and session id, its statuses written back as the sink would."""
    monkeypatch.setattr(session_module, "_session_ids", itertools.count(number))
    result = run_cycle(cluster.cache, CONF, now=datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=number))
    cluster.write_back(result)
    for uid in sorted(result.changed_podgroups):
        obj = cluster.objects.get(("PodGroup", uid))
        if obj is not None:
            obj["status"] = copy.deepcopy(result.podgroups[uid])
            cluster.cache.apply(obj)
    return {f.name: getattr(result, f.name) for f in fields(result) if f.name not in ("timings", "plugin_timings")}


@settings(max_examples=150, deadline=None)
@given(operations, st.integers(1, 3))
def test_what_closes_keep_gives_the_statuses_a_full_close_gives(ops, repeat):
    """Closing works out only the jobs that changed (`central.framework.closing`): every cycle
    hands over what a close that worked out every job hands over, byte for byte (statuses,
    conditions with their stamps, which ones changed, why pods wait, queue statuses)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        kept, full = Cluster(), Cluster()
        number = 0
        for op in ops:
            for cluster in (kept, full):
                if op[0] == "delete":
                    cluster.delete(op[1], op[2])
                elif op[0] != "cycle":
                    cluster.put(op)
            if op[0] == "cycle":
                for _ in range(repeat):  # quiet cycles in a row: the kept statuses stand
                    number += 1
                    _forget_kept(full.cache)
                    assert _cycle_result(kept, number, monkeypatch) == _cycle_result(full, number, monkeypatch)
        for uid, job in kept.cache.jobs.items():
            other = full.cache.jobs[uid]
            assert (job.phase, job.conditions, job.reported) == (other.phase, other.conditions, other.reported)


@pytest.mark.parametrize("seed", range(12))
def test_views_kept_across_cycles_and_shared_by_templates_of_one_shape_decide_as_fresh_ones(seed):
    """Template views outlive their session (`Placement.keep`) and templates of one shape share
    one (`placement._shape`: these pods differ in labels, some in anti-affinity): every cycle
    hands over what a cycle with a fresh view per template hands over, while pods come,
    finish and go, and nodes are resized (rows written, the node index kept) or relabelled."""
    rng = random.Random(seed)
    nodes = [f"m{i}" for i in range(8)]  # enough that a few rows written are refreshed alone
    with pytest.MonkeyPatch.context() as monkeypatch:
        kept, fresh = Cluster(), Cluster()
        steps: list[tuple] = [("node", name, {"cpu": 2, "memory": "8Gi", "labels": {"zone": "a"}}) for name in nodes]
        for i in range(60):
            roll = rng.random()
            if roll < 0.4:  # a pod of its own job, waiting
                anti = rng.random() < 0.2
                steps += [("podgroup", f"g{i}", {"minMember": 1}), ("pod", f"p{i}", {
                    "group": f"g{i}", "role": "worker", "labels": {"app": "solo" if anti else f"web-{i}"},
                    "cpu": rng.choice(["500m", 1, 2]), "memory": "1Gi", **({"spec": {"affinity": ANTI}} if anti else {})})]
            elif roll < 0.6:  # a bound pod finishes
                bound = sorted(key for (kind, key), obj in kept.objects.items()
                               if kind == "Pod" and obj["spec"].get("nodeName") and obj["status"]["phase"] == "Running")
                if bound:
                    steps.append(("finish", rng.choice(bound)))
            elif roll < 0.7:
                steps.append(("node", rng.choice(nodes), {"cpu": rng.choice([1, 2, 3]), "memory": "8Gi",
                                                          "labels": {"zone": "b" if rng.random() < 0.2 else "a"}}))
            steps.append(("cycle",))
            for step in steps:
                for cluster in (kept, fresh):
                    if step[0] == "finish":
                        pod = cluster.objects[("Pod", step[1])]
                        pod["status"]["phase"] = "Succeeded"
                        cluster.cache.apply(pod)
                    elif step[0] != "cycle":
                        cluster.put(step)
                if step[0] == "cycle":
                    shared = _cycle_result(kept, i + 1, monkeypatch)
                    with pytest.MonkeyPatch.context() as own:
                        own.setattr(placement_module, "_shape", lambda template: template)
                        fresh.cache.kept_views = None
                        assert _cycle_result(fresh, i + 1, monkeypatch) == shared, (seed, i)
            steps = []


def test_a_view_is_shared_by_the_jobs_of_one_shape_and_kept_for_the_next_cycle(monkeypatch):
    """A second job whose pods differ from the first's only in labels asks the first's view,
    in the next cycle: only the rows the first job's pods took are worked out again."""
    cluster, nodes = Cluster(), 8  # enough that one row written is refreshed alone
    for i in range(nodes):
        cluster.put(("node", f"n{i}", {"cpu": 8, "memory": "8Gi"}))
    refreshed: list[int] = []
    refresh = placement_module.Placement._refresh

    def counted(self, task, view, rows):
        refreshed.append(len(rows))
        refresh(self, task, view, rows)
    monkeypatch.setattr(placement_module.Placement, "_refresh", counted)
    cluster.put(("podgroup", "g0", {"minMember": 1}))
    cluster.put(("pod", "p0", {"group": "g0", "role": "worker", "labels": {"app": "one"}, "cpu": 1, "memory": "1Gi"}))
    cluster.cycle()
    assert refreshed == [nodes]  # a new view: every row
    cluster.put(("podgroup", "g1", {"minMember": 1}))
    cluster.put(("pod", "p1", {"group": "g1", "role": "worker", "labels": {"app": "two"}, "cpu": 1, "memory": "1Gi"}))
    cluster.cycle()
    assert refreshed == [nodes, 1]  # the kept view: only the row p0 took
    assert cluster.cache.tasks["ns/p1"].node is not None


def test_views_kept_under_one_configuration_are_not_used_under_another():
    """A configuration scores otherwise (binpack packs where nodeorder alone spreads): the
    cycle after a reload works its views out afresh, and places as a fresh cache would."""
    packing = load_config(DEFAULT_CONF_YAML + "  - name: binpack\n    arguments: {binpack.weight: 10}\n")
    placed = []
    for keep in (True, False):
        cluster = Cluster()
        for i in range(8):
            cluster.put(("node", f"m{i}", {"cpu": 4, "memory": "8Gi"}))
        for i in range(3):
            cluster.put(("podgroup", f"g{i}", {"minMember": 1}))
            cluster.put(("pod", f"p{i}", {"group": f"g{i}", "role": "worker", "cpu": 1, "memory": "1Gi"}))
            cluster.cycle()  # under CONF: spread
        for i in range(3, 6):
            cluster.put(("podgroup", f"g{i}", {"minMember": 1}))
            cluster.put(("pod", f"p{i}", {"group": f"g{i}", "role": "worker", "cpu": 1, "memory": "1Gi"}))
        if not keep:
            cluster.cache.kept_views = None
        cluster.write_back(run_cycle(cluster.cache, packing))
        placed.append(sorted((t.uid, t.node) for t in cluster.cache.tasks.values()))
    assert placed[0] == placed[1]
    assert len({node for _, node in placed[0][3:]}) == 1  # packed


def test_a_change_to_a_job_ends_its_kept_close():
    """A job's tasks changing bumps its version, and its status is worked out again."""
    cluster = Cluster()
    cluster.put(("node", "n0", {"cpu": 4, "memory": "8Gi"}))
    cluster.put(("podgroup", "g0", {"minMember": 2}))
    for name in ("p0", "p1"):
        cluster.put(("pod", name, {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Running"}))
    job = cluster.cache.jobs["ns/g0"]
    run_cycle(cluster.cache, CONF)
    run_cycle(cluster.cache, CONF)
    kept, version = job.closed, job.version
    assert kept is not None and kept.quiet and kept.status["phase"] == "Running"
    run_cycle(cluster.cache, CONF)
    assert job.closed is kept  # nothing changed: the last close stands
    cluster.put(("pod", "p1", {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Succeeded"}))
    assert job.version > version
    result = run_cycle(cluster.cache, CONF)
    assert job.closed is not kept and result.podgroups["ns/g0"]["succeeded"] == 1


class Marking(Plugin, SessionClose):
    """Sets a side condition on every job at close while `marking` is on: something a session
    records of a job besides what its state gives, and then stops recording."""

    name = "marking"
    closes_by_state = True  # side conditions only: closing sees them
    marking = False
    asked: list[int] = []  # how many jobs each session's close listed as changing

    def on_session_close(self) -> None:
        Marking.asked.append(len(list(self.handle.closing_jobs())))
        if Marking.marking:
            for job in self.handle.jobs.values():
                self.handle.set_side_condition(job, "Marked", True, "Marked", "a plugin's own condition")


def test_a_job_a_session_recorded_something_of_is_worked_out_again_after(monkeypatch):
    """A settled job that a plugin's last word marks, and the close after the mark stops, hand
    over what a full close does (the last close's record is not the job's state alone)."""
    conf = load_config(DEFAULT_CONF_YAML + "  - name: marking\n", "marking.conf",
                       Registry(REGISTRY.actions, {**REGISTRY.plugins, "marking": Marking}))
    kept, full = Cluster(), Cluster()
    for cluster in (kept, full):
        cluster.put(("node", "n0", {"cpu": 4, "memory": "8Gi"}))
        cluster.put(("podgroup", "g0", {"minMember": 2}))
        for name in ("p0", "p1"):
            cluster.put(("pod", name, {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Running"}))
    for number, marking in enumerate([False, False, True, False, False, True, True, False], start=1):
        monkeypatch.setattr(Marking, "marking", marking)
        _forget_kept(full.cache)
        results = []
        for cluster in (kept, full):
            monkeypatch.setattr(session_module, "_session_ids", itertools.count(number))
            result = run_cycle(cluster.cache, conf, now=datetime(2026, 1, 1, 0, number, tzinfo=timezone.utc))
            results.append((result.podgroups, result.changed_podgroups, result.unschedulable))
        assert results[0] == results[1], number


def test_a_kept_job_valid_answer_ends_when_the_job_changes():
    """Gang's JobValid answer depends on the job alone: kept across sessions on the job, it
    is asked again once the job's tasks change."""
    cluster = Cluster()
    cluster.put(("node", "n0", {"cpu": 4, "memory": "8Gi"}))
    cluster.put(("podgroup", "g0", {"minMember": 3}))
    for name in ("p0", "p1"):
        cluster.put(("pod", name, {"group": "g0", "cpu": 1, "memory": "1Gi"}))
    job = cluster.cache.jobs["ns/g0"]

    def valid() -> str | None:
        ssn = Session(cluster.cache, CONF)
        answer = ssn.job_valid(job)
        ssn.rollback()
        return answer

    assert "not enough valid tasks" in (valid() or "")
    assert job.valid is not None and job.valid[0] == job.version
    cluster.put(("pod", "p2", {"group": "g0", "cpu": 1, "memory": "1Gi"}))
    assert valid() is None
    other = load_config(DEFAULT_CONF_YAML, "another.conf")  # another configuration asks again
    ssn = Session(cluster.cache, other)
    assert ssn.job_valid(job) is None and job.valid[1] is other
    ssn.rollback()


class Unsure(Marking):
    """The same last word, without saying it sets conditions from the job's state alone."""

    name = "unsure"
    closes_by_state = False


@pytest.mark.parametrize(("plugin", "changing"), [(Marking, [1, 0, 0, 0]), (Unsure, [1, 1, 1, 1])])
def test_jobs_settle_only_while_every_plugin_s_last_word_is_by_state(plugin, changing, monkeypatch):
    """A plugin that does not say its conditions come from the job's state alone (the
    default) has every job worked out at every close, as before jobs could settle."""
    conf = load_config(DEFAULT_CONF_YAML + f"  - name: {plugin.name}\n", "c.conf",
                       Registry(REGISTRY.actions, {**REGISTRY.plugins, plugin.name: plugin}))
    cluster = Cluster()
    cluster.put(("node", "n0", {"cpu": 4, "memory": "8Gi"}))
    cluster.put(("podgroup", "g0", {"minMember": 1}))
    cluster.put(("pod", "p0", {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Running"}))
    monkeypatch.setattr(Marking, "asked", [])
    for _ in changing:
        run_cycle(cluster.cache, conf)
    assert Marking.asked == changing


def _running_gang(cluster: Cluster) -> None:
    cluster.put(("node", "n0", {"cpu": 4, "memory": "8Gi"}))
    cluster.put(("podgroup", "g0", {"minMember": 2}))
    for name in ("p0", "p1"):
        cluster.put(("pod", name, {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Running"}))


def _restless(cache: ClusterCache, conf: Any = CONF) -> set[str]:
    ssn = Session(cache, conf)
    ssn.rollback()
    return set(ssn.restless)


def test_a_running_job_comes_to_rest_and_a_change_wakes_it():
    """A job with nothing to place, admitted and settled is at rest: the next sessions under the
    same configuration pass it by, until it changes or the configuration does."""
    cluster = Cluster()
    _running_gang(cluster)
    cluster.put(("podgroup", "g1", {"minMember": 1}))
    cluster.put(("pod", "p2", {"group": "g1", "cpu": 8, "memory": "1Gi"}))  # fits nowhere: never at rest
    for _ in range(3):
        cluster.cycle()
    assert _restless(cluster.cache) == {"ns/g1"}
    assert _restless(cluster.cache, load_config(DEFAULT_CONF_YAML, "another.conf")) == {"ns/g0", "ns/g1"}
    cluster.put(("pod", "p1", {"group": "g0", "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Succeeded"}))
    assert _restless(cluster.cache) == {"ns/g0", "ns/g1"}
    result = run_cycle(cluster.cache, CONF)
    assert result.podgroups["ns/g0"]["succeeded"] == 1 and "ns/g0" in result.changed_podgroups


def test_a_job_at_rest_leaves_the_session_with_its_queue_and_comes_back_with_it():
    """Sessions keep the jobs they consider and their statuses across cycles: a job at rest
    goes when its queue does and returns with it, as a fresh cache has it each time."""
    cluster = Cluster()
    cluster.put(("queue", "q1", {"weight": 1}))
    cluster.put(("node", "n0", {"cpu": 4, "memory": "8Gi"}))
    for group, queue in (("g0", "q1"), ("g1", "default")):
        cluster.put(("podgroup", group, {"minMember": 1, "queue": queue}))
        cluster.put(("pod", f"p-{group}", {"group": group, "cpu": 1, "memory": "1Gi", "node": "n0", "phase": "Running"}))
    for _ in range(3):
        cluster.cycle()
    assert _restless(cluster.cache) == set()
    queue = cluster.objects[("Queue", "q1")]
    for step, jobs in (("status write", {"ns/g0", "ns/g1"}), ("queue gone", {"ns/g1"}), ("queue back", {"ns/g0", "ns/g1"})):
        if step == "status write":
            cluster.cache.apply({**queue, "status": {"state": "Open", "running": 1}})
        elif step == "queue gone":
            cluster.delete("Queue", 1)
        else:
            cluster.put(("queue", "q1", {"weight": 1}))
        kept, fresh = run_cycle(cluster.cache, CONF), run_cycle(cluster.fresh(), CONF)
        assert set(kept.podgroups) == jobs, step
        assert {uid: semantic(status) for uid, status in kept.podgroups.items()} == \
            {uid: semantic(status) for uid, status in fresh.podgroups.items()}, step
        assert kept.queues == fresh.queues, step
    assert _restless(cluster.cache) == set()


def test_a_rolled_back_close_takes_its_rest_marks_back():
    cluster = Cluster()
    _running_gang(cluster)
    job = cluster.cache.jobs["ns/g0"]
    for _ in range(5):
        before, conf_before = job.rest, cluster.cache.rest_conf
        ssn = Session(cluster.cache, CONF)
        handle = ActionHandle(ssn)
        for name in CONF.actions:
            CONF.registry.actions[name](CONF.action_settings(name)).execute(handle)
        ssn.close()
        if job.rest != before:
            assert job.rest == job.version
            ssn.rollback()
            assert (job.rest, cluster.cache.rest_conf) == (before, conf_before)
            return
    raise AssertionError("the running job never came to rest")


def test_a_job_with_a_pod_left_to_place_never_rests():
    """A job whose queue is past its share is not reached: nothing is recorded of it and it
    settles, but it has a pod to place. When the other queue's demand goes, the next session
    places it."""
    cluster = Cluster()
    cluster.put(("node", "n0", {"cpu": 4, "memory": "4Gi"}))
    for queue, group, running, cpu, pending, asks in (("q1", "g0", "p0", 2, "p1", 1), ("q2", "g1", "p2", 1, "p3", 4)):
        cluster.put(("queue", queue, {"weight": 1}))
        cluster.put(("podgroup", group, {"minMember": 1, "queue": queue}))
        cluster.put(("pod", running, {"group": group, "cpu": cpu, "memory": f"{cpu}Gi", "node": "n0", "phase": "Running"}))
        cluster.put(("pod", pending, {"group": group, "cpu": asks, "memory": f"{asks}Gi"}))
    for _ in range(3):
        cluster.cycle()
    assert cluster.cache.tasks["ns/p1"].node is None and not cluster.cache.jobs["ns/g0"].fit_errors  # q1 has its share
    cluster.delete("Pod", 3)  # p3: q2 asks for no more than it has
    assert run_cycle(cluster.cache, CONF).binds == {"ns/p1": "n0"}


def _kubelet(cluster: Cluster) -> None:
    """Bound pods start, as a kubelet reports them."""
    for (kind, _), obj in sorted(cluster.objects.items()):
        if kind == "Pod" and obj["spec"].get("nodeName") and obj["status"]["phase"] == "Pending":
            obj["status"]["phase"] = "Running"
            cluster.cache.apply(obj)


def test_sessions_that_pass_jobs_at_rest_by_hand_over_what_full_sessions_do(monkeypatch):
    """Random lives of gangs and plain pods: created, bound, started, finished and deleted, queues
    squeezed and widened, idle cycles between. Every cycle of a cluster whose jobs come to rest
    (`JobInfo.rest`) hands over what a cluster where every job counts as changed does. The sessions
    must have passed jobs at rest by, many times, for this to say anything."""
    opened = Session.__init__
    resting = [0]

    def counting(self: Session, *args: Any, **kwargs: Any) -> None:
        opened(self, *args, **kwargs)
        resting[0] += len(self.restless) < len(self.jobs)
    monkeypatch.setattr(Session, "__init__", counting)
    number = 0
    for seed in range(12):
        rng = random.Random(seed)
        kept, full = Cluster(), Cluster()
        for cluster in (kept, full):
            for node in NODES:
                cluster.put(("node", node, {"cpu": 4, "memory": "8Gi"}))
            cluster.put(("queue", "default", {"capability": {"cpu": 8}}))
            for group in GROUPS:
                cluster.put(("podgroup", group, {"minMember": 2}))
        for _ in range(40):
            op = rng.choice(["pod", "pod", "plain", "kubelet", "finish", "delete", "queue", "cycle", "cycle", "cycle"])
            pick, name = rng.randrange(8), f"p{rng.randrange(12)}"
            for cluster in (kept, full):
                if op == "pod":
                    cluster.put(("pod", name, {"group": GROUPS[pick % 3], "cpu": 1, "memory": "1Gi"}))
                elif op == "plain" and ("Pod", f"ns/{name}") not in cluster.objects:
                    obj = objects_of({"pods": {f"ns/{name}": {"cpu": "500m", "memory": "1Gi"}}})[0]
                    cluster.objects[("Pod", f"ns/{name}")] = obj
                    cluster.cache.apply(obj)
                elif op == "kubelet":
                    _kubelet(cluster)
                elif op == "finish":
                    pods = sorted(k for k in cluster.objects if k[0] == "Pod" and cluster.objects[k]["spec"].get("nodeName"))
                    if pods:
                        obj = cluster.objects[pods[pick % len(pods)]]
                        obj["status"]["phase"] = "Succeeded"
                        cluster.cache.apply(obj)
                elif op == "delete":
                    cluster.delete("Pod", pick)
                elif op == "queue":
                    cluster.put(("queue", "default", {"capability": {"cpu": [2, 8, 12][pick % 3]}}))
            if op == "cycle":
                for _ in range(1 + pick % 3):  # quiet cycles in a row: jobs come to rest
                    number += 1
                    _forget_kept(full.cache)
                    assert _cycle_result(kept, number, monkeypatch) == _cycle_result(full, number, monkeypatch), seed
    assert resting[0] > 50


def test_the_node_index_is_kept_over_status_and_annotation_writes_and_laid_out_again_on_a_label():
    cache = ClusterCache()
    def node(name: str, zone: str, **spec: Any) -> dict[str, Any]:
        return objects_of({"nodes": {name: {"cpu": 4, "labels": {"zone": zone}, **spec}}})[0]
    for name in NODES:
        cache.apply(node(name, "a"))
    kept = Session(cache, CONF).handle.node_index
    cache.journal = None
    cache.apply(node("n1", "a", annotations={"node.alpha.kubernetes.io/ttl": "30"}))  # the TTL controller's write
    assert Session(cache, CONF).handle.node_index is kept
    cache.journal = None
    cache.apply(node("n1", "b"))
    index = Session(cache, CONF).handle.node_index
    assert index is not kept and list(index.label("zone")) == ["a", "b", "a"]
