"""Batch placement (`Placement.plan`) decides exactly what placing pods one by one decides.

Each case is a random cluster: nodes of mixed shapes, pod limits, taints and labels, pods
already running (some being deleted, so future idle differs from idle and pods get
pipelined), queues with weights and capabilities, and gangs whose tasks are plain, carry
per-pod constraints (required anti-affinity, host ports, topology spread, preferred pod
affinity), or share one template between two roles. Two cycles run with batches and two
without, under several configurations; every decision and the cache they leave must agree.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from central.bench.synthetic import synthetic_cluster
from central.framework.conf import DEFAULT_CONF_YAML
from central.framework.placement import Placement
from central.model.cache import ClusterCache
from central.model.parse import parse_pod
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

CONFS = {
    "default": DEFAULT_CONF_YAML,
    "binpack": DEFAULT_CONF_YAML + "  - name: binpack\n",
    # packing: a node's score grows with each pod, so one row takes many pods of a batch
    "packing": DEFAULT_CONF_YAML + "  - name: binpack\n    arguments: {binpack.weight: 10}\n",
    "mostrequested": DEFAULT_CONF_YAML.replace(
        "  - name: nodeorder\n",
        "  - name: nodeorder\n    arguments: {mostrequested.weight: 2, leastrequested.weight: 0}\n"),
    # task-topology scores by where the job's other pods went: its jobs are never batched
    "topology": DEFAULT_CONF_YAML + "  - name: task-topology\n    arguments: {task-topology.weight: 10}\n",
}
SHAPES = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("1", "4Gi"), ("3", "1Gi"), ("250m", "3Gi")]


def random_cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100},
        *({"kind": "Queue", "metadata": {"name": f"q{i}"},
           "spec": {"weight": rng.randint(1, 4), **({"capability": {"cpu": str(rng.randint(8, 60))}}
                                                    if rng.random() < 0.3 else {})}} for i in range(3))]
    nodes = rng.randint(3, 30)
    prefer_no = rng.random() < 0.3  # a PreferNoSchedule taint makes nodeorder normalise: one by one then
    for i in range(nodes):
        spec: dict[str, Any] = {}
        roll = rng.random()
        if roll < 0.1:
            spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        elif roll < 0.25 and prefer_no:
            spec["taints"] = [{"key": "spot", "value": "y", "effect": "PreferNoSchedule"}]
        elif roll < 0.3:
            spec["unschedulable"] = True
        objects.append({"kind": "Node", "metadata": {"name": f"n{i:03d}", "labels": {"zone": f"z{i % 3}"}},
                        "spec": spec, "status": {"allocatable": {
                            "cpu": str(rng.choice([2, 4, 8, 16, 32])), "memory": f"{rng.choice([4, 8, 16, 64])}Gi",
                            "pods": str(rng.choice([3, 8, 110]))}}})
    for i in range(rng.randint(0, nodes * 2)):  # running pods, some on their way out
        cpu, memory = rng.choice(SHAPES)
        meta: dict[str, Any] = {"name": f"old-{i}", "namespace": "ns"}
        if rng.random() < 0.3:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        objects.append({"kind": "Pod", "metadata": meta, "spec": {
            "schedulerName": "volcano", "nodeName": f"n{rng.randrange(nodes):03d}",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Running"}})
    for j in range(rng.randint(1, 15)):
        size = rng.randint(1, 24)
        name = f"job{j:02d}"
        objects.append({"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns", **(
            {"annotations": {"volcano.sh/task-topology-affinity": "ps,worker"}} if rng.random() < 0.3 else {})},
            "spec": {"minMember": size if rng.random() < 0.6 else rng.randint(1, size), "queue": f"q{rng.randrange(3)}",
                     **({"priorityClassName": "high"} if rng.random() < 0.2 else {})},
            "status": {"phase": "Inqueue"}})
        shapes = [rng.choice(SHAPES) for _ in range(2)]
        shared = rng.random() < 0.3  # both roles the same pod spec: one template, two roles
        extra = _constraint(rng, name)
        ports = extra.pop("ports", None)
        for t in range(size):
            role = "ps" if t % 3 == 0 else "worker"
            cpu, memory = shapes[0] if shared or role == "worker" else shapes[1]
            spec = {"schedulerName": "volcano", **extra,
                    "containers": [{"name": "c", "image": "x", **({"ports": ports} if ports else {}),
                                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
            objects.append({"kind": "Pod", "metadata": {
                "name": f"{name}-{t}", "namespace": "ns", "labels": {"app": name},
                "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": role}},
                "spec": spec, "status": {"phase": "Pending"}})
    return objects


def _constraint(rng: random.Random, job: str) -> dict[str, Any]:
    """Per-pod constraints for some jobs' pods (these go one by one), none for most."""
    term = {"labelSelector": {"matchLabels": {"app": job}}, "topologyKey": "kubernetes.io/hostname"}
    return rng.choice([{}, {}, {}, {}, {}, {"tolerations": [{"operator": "Exists"}]},
                       {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}},
                       {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                           {"weight": 10, "podAffinityTerm": {**term, "topologyKey": "zone"}}]}}},
                       {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                       "whenUnsatisfiable": "DoNotSchedule",
                                                       "labelSelector": {"matchLabels": {"app": job}}}]},
                       {"ports": [{"containerPort": 80, "hostPort": 8080}]},
                       {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                           {"weight": 5, "preference": {"matchExpressions": [
                               {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}}])


def decisions(objects: list[dict[str, Any]], conf_text: str, batches: bool) -> tuple[list, list[int]]:
    """What two cycles decide, and how many pods each batch plan handed out."""
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    conf = load_config(conf_text)
    taken: list[int] = []
    plan = Placement.plan

    def counted(self, task, count, within=None):
        made = plan(self, task, count, within) if batches else None
        if made is not None:
            taken.append(made)
        return made

    out = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Placement, "plan", counted)
        out.append(_cycles(cache, conf))
    return out, [p.taken for p in taken]


def _cycles(cache: ClusterCache, conf) -> list:
    out = []
    for _ in range(2):
        result = run_cycle(cache, conf)
        podgroups = {uid: {**status, "conditions": [_unstamped(c) for c in status["conditions"]]}
                     for uid, status in result.podgroups.items()}
        out.append((result.binds, result.pipelined, result.nominated, result.pending_reasons, podgroups, result.queues))
        for task in list(cache.starting.values()):  # the kubelets start what was bound
            if task.uid in result.binds:
                cache.set_status(task, task.status.RUNNING, task.node)
    out.append(sorted((t.uid, t.status, t.node) for t in cache.tasks.values()))
    return out


def _unstamped(condition: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in condition.items() if k not in ("transitionID", "lastTransitionTime")}


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(CONFS)))
def test_batches_decide_what_one_by_one_decides(seed, conf):
    objects = random_cluster(seed)
    one_by_one, _ = decisions(objects, CONFS[conf], False)
    batched, taken = decisions(objects, CONFS[conf], True)
    event(f"pods placed in batches: {'some' if any(n > 1 for n in taken) else 'none'}")
    assert batched == one_by_one


@pytest.mark.parametrize("conf", ["binpack", "packing"])
def test_batches_are_used_and_agree_on_the_bench_cluster(conf):
    """The bench's cluster: plain gangs, where most pods go in batches, deep ones under packing."""
    objects = synthetic_cluster(60, 900, seed=3)
    one_by_one, _ = decisions(objects, CONFS[conf], False)
    batched, taken = decisions(objects, CONFS[conf], True)
    assert batched == one_by_one
    assert sum(taken) > 600 and max(taken) >= 16


def test_the_largest_roles_last_pods_go_in_one_batch_after_the_others_roles_end():
    """Task order puts a job's roles' pods index by index (ps-0, worker-0, ps-1, worker-1,
    worker-2, ...): the workers after the last ps are planned as one run."""
    objects: list[dict[str, Any]] = [
        {"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "16", "memory": "32Gi"}}}
        for i in range(8)]
    objects.append({"kind": "PodGroup", "metadata": {"name": "tf", "namespace": "ns"},
                    "spec": {"minMember": 12}, "status": {"phase": "Inqueue"}})
    for role, replicas, cpu in (("ps", 2, "2"), ("worker", 10, "1")):
        for i in range(replicas):
            objects.append({"kind": "Pod", "metadata": {
                "name": f"tf-{role}-{i}", "namespace": "ns",
                "annotations": {"scheduling.k8s.io/group-name": "tf", "volcano.sh/task-spec": role}},
                "spec": {"schedulerName": "volcano", "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
                "status": {"phase": "Pending"}})
    one_by_one, _ = decisions(objects, CONFS["binpack"], False)
    batched, taken = decisions(objects, CONFS["binpack"], True)
    assert batched == one_by_one
    assert len(one_by_one[0][0][0]) == 12  # every pod bound in the first cycle
    assert max(taken) == 9  # worker-1 .. worker-9, after ps-1


def as_the_api_server_stores(pod: dict[str, Any], i: int) -> dict[str, Any]:
    """The pod with a service-account volume of its own name, mounted in each container."""
    volume = f"kube-api-access-{i:05d}"
    spec = dict(pod["spec"], volumes=[{"name": volume, "projected": {"sources": [{"serviceAccountToken": {
        "path": "token"}}]}}])
    spec["containers"] = [dict(c, volumeMounts=[{"name": volume, "mountPath": "/var/run/secrets"}])
                          for c in spec["containers"]]
    return dict(pod, spec=spec)


def test_pods_as_the_api_server_stores_them_are_batched_too():
    """Twins that differ only in their service-account volume still share a template, and so a batch."""
    objects = [as_the_api_server_stores(obj, i) if obj["kind"] == "Pod" else obj
               for i, obj in enumerate(synthetic_cluster(60, 900, seed=3))]
    one_by_one, _ = decisions(objects, CONFS["binpack"], False)
    batched, taken = decisions(objects, CONFS["binpack"], True)
    assert batched == one_by_one
    assert sum(taken) > 600


def test_twins_as_the_api_server_stores_them_are_parsed_once():
    """Their service-account volumes and mounts, and the env plugin's index, are not the template's."""
    pods = [o for o in synthetic_cluster(1, 2, seed=3) if o["kind"] == "Pod"]
    twins = [as_the_api_server_stores(dict(pods[0], metadata=dict(pods[0]["metadata"], name=f"p-{i}")), i)
             for i in range(3)]
    for i, pod in enumerate(twins):
        pod["spec"]["containers"][0]["env"] = [{"name": "VC_TASK_INDEX", "value": str(i)}]
    memo: dict[str, Any] = {}
    first, *others = (parse_pod(pod, memo)[0].template for pod in twins)
    assert len(memo) == 1 and all(t is first for t in others)
    twins[2]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}  # a different template
    assert parse_pod(twins[2], memo)[0].template != first and len(memo) == 2


def test_twins_share_a_template_across_the_text_memos_clearing():
    """The text memo is cleared when full; the templates made before stay shared."""
    pods = [o for o in synthetic_cluster(1, 2, seed=3) if o["kind"] == "Pod"]
    first, twin = (as_the_api_server_stores(dict(pods[0], metadata=dict(pods[0]["metadata"], name=n)), i)
                   for i, n in enumerate(("first", "twin")))
    cache = ClusterCache()
    cache.apply(first)
    cache._templates.update((str(i), cache.tasks[f"{first['metadata']['namespace']}/first"].template)
                            for i in range(100_001))  # a full memo: the next pod clears it
    cache.apply(twin)
    namespace = first["metadata"]["namespace"]
    assert len(cache._templates) == 1
    assert cache.tasks[f"{namespace}/twin"].template is cache.tasks[f"{namespace}/first"].template


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 20_000), st.integers(1, 200), st.sampled_from([3, 50, 300]), st.integers(0, 2**32 - 1))
def test_the_best_rows_are_found_as_a_full_partition_finds_them(n, count, spread, seed):
    """A plan's candidate rows: the narrowing by a sample (many rows, few pods) changes nothing,
    ties at the cut included (scores are floored sums, so ties are common)."""
    import numpy as np

    from central.framework.placement import _best

    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(30_000, n, replace=False))
    scores = np.floor(rng.uniform(0, spread, n)) + rng.choice([0.0, 0.25], n)
    cut = np.partition(scores, n - count)[n - count] if n > count else None
    expected = rows if cut is None else np.concatenate(
        [rows[scores > cut], rows[scores == cut][: count - int((scores > cut).sum())]])
    assert np.array_equal(_best(rows, scores, count), expected)
