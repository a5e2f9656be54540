"""Scenario tests kept as data, in the style of Volcano's TestCommonStruct.

A scenario file holds a list of cases. Each case has a cluster, either as full Kubernetes
objects (`objects:`) or in a shorthand that expands to them:

    nodes:     {n1: {cpu: 4, memory: 8Gi, labels: {...}, taints: [...], unschedulable: true}}
    queues:    {q1: {weight: 2, capability: {cpu: 4}}}        # a Queue's spec (+ state:, annotations:)
    podgroups: {ns/pg: {minMember: 2, queue: q1, phase: Inqueue, ...}}  # spec (+ phase:)
    pods:      {ns/p: {group: pg, cpu: 1, memory: 1Gi, node: n1, phase: Running, priority: 10,
                       spec: {...extra pod spec...}, annotations: {...}, labels: {...},
                       scheduled: <PodScheduled=True since, RFC 3339>}}
    hypernodes: {s0: {tier: 1, nodes: [n1, n2]}, s2: {tier: 2, hypernodes: [s0, s1]},
                 r1: {tier: 1, regex: "^r1-"}, l1: {tier: 1, labels: {rack: l1}}}   # HyperNodes

an optional `config:` (volcano-scheduler.conf text; default: Volcano's default), `features:`
(the scheduler's --feature-gates, e.g. "SchedulingGatesQueueAdmission=true"), `cycles:`,
`now:` (the first cycle's time; default 2026-01-01T01:00:00Z, an hour after the shorthand
pods' creation), `node_reports:` (agent data per node, see `node_data_of`),
and `expect:` with any of `binds` (exact map), `evictions` (exact list), `pipelined` (exact
map), `ungated` (the pods whose queue-allocation gate was removed, in order), `phases` ({podgroup: phase}), `pending` ({pod: substring of its reason}),
`conditions` ({podgroup: substring of its Unschedulable message, or null for none}), `bound_count`,
`annotations` ({pod: {key: value or null for absent}}, the named keys plugins wrote on bound pods),
`faults` ({"Kind key": substring of why the session could not use the object}).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.fields import parse_index_list, parse_time
from central.model.nodedata import GpuCard, NodeData, NumaCell
from central.model.schedulinggate import parse_feature_gates
from central.resources.quantity import parse_quantity
from central.scheduler import load_config
from central.sim.manifests import Manifests, load_into
from central.sim.simulate import SimulationResult, simulate

RESOURCE_KEYS = ("cpu", "memory", "pods", "nvidia.com/gpu", "nvidia.com/a100", "rdma/hca", "volcano.sh/gpu-memory", "volcano.sh/gpu-number",
                 "example.com/fpga")


def load_cases(path: Path) -> list[dict[str, Any]]:
    return yaml.safe_load(path.read_text())


def objects_of(case: dict[str, Any]) -> list[dict[str, Any]]:
    objs = list(case.get("objects") or [])
    for name, spec in (case.get("nodes") or {}).items():
        spec = dict(spec)
        alloc = {k: str(spec.pop(k)) for k in RESOURCE_KEYS if k in spec}
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": spec.pop("labels", {}), "annotations": spec.pop("annotations", {})},
                "spec": {k: spec.pop(k) for k in ("taints", "unschedulable") if k in spec},
                "status": {"allocatable": alloc}}
        assert not spec, f"unknown node shorthand keys {list(spec)}"
        objs.append(node)
    for name, spec in (case.get("queues") or {}).items():
        spec = dict(spec)
        state = spec.pop("state", None)
        annotations = spec.pop("annotations", {})
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                     "metadata": {"name": name, "annotations": annotations},
                     "spec": spec, **({"status": {"state": state}} if state else {})})
    for key, spec in (case.get("podgroups") or {}).items():
        ns, name = key.split("/")
        spec = dict(spec)
        phase = spec.pop("phase", "Pending")
        annotations = spec.pop("annotations", {})
        created = spec.pop("created", "2026-01-01T00:00:00Z")
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": ns, "annotations": annotations, "creationTimestamp": created},
                     "spec": spec, "status": {"phase": phase}})
    for name, spec in (case.get("hypernodes") or {}).items():
        objs.append(_hypernode(name, dict(spec)))
    for i, (key, spec) in enumerate((case.get("pods") or {}).items()):
        objs.append(_pod(key, dict(spec), i))
    return objs


def _hypernode(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in spec.pop("nodes", [])]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}} for n in spec.pop("hypernodes", [])]
    if "regex" in spec:
        members.append({"type": "Node", "selector": {"regexMatch": {"pattern": spec.pop("regex")}}})
    if "labels" in spec:
        members.append({"type": "Node", "selector": {"labelMatch": {"matchLabels": spec.pop("labels")}}})
    body = {"tier": spec.pop("tier"), "members": members, **({"tierName": spec.pop("tierName")} if "tierName" in spec else {})}
    assert not spec, f"unknown hypernode shorthand keys {list(spec)}"
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}, "spec": body}


def _pod(key: str, spec: dict[str, Any], order: int) -> dict[str, Any]:
    ns, name = key.split("/")
    annotations = dict(spec.pop("annotations", {}))
    if "group" in spec:
        annotations["scheduling.k8s.io/group-name"] = spec.pop("group")
    if "role" in spec:
        annotations["volcano.sh/task-spec"] = spec.pop("role")
    requests = {k: str(spec.pop(k)) for k in RESOURCE_KEYS if k in spec}
    pod_spec = {"schedulerName": spec.pop("schedulerName", "volcano"),
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}],
                **spec.pop("spec", {})}
    if "node" in spec:
        pod_spec["nodeName"] = spec.pop("node")
    if "priority" in spec:
        pod_spec["priority"] = spec.pop("priority")
    meta = {"name": name, "namespace": ns, "annotations": annotations, "labels": spec.pop("labels", {}),
            "creationTimestamp": spec.pop("created", f"2026-01-01T00:00:{order:02d}Z")}
    if spec.pop("deleting", False):
        meta["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    phase = spec.pop("phase", "Running" if "nodeName" in pod_spec else "Pending")
    status: dict[str, Any] = {"phase": phase}
    if "scheduled" in spec:  # when its PodScheduled condition turned True
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": spec.pop("scheduled")}]
    assert not spec, f"unknown pod shorthand keys {list(spec)}"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec, "status": status}


def node_data_of(case: dict[str, Any], now: datetime) -> list[NodeData]:
    """`node_reports: {n1: {age: 5, cpu_usage: 2, memory_usage: 4Gi, cpu_manager: static,
    topology_manager: single-numa-node, numa: [{cpus: 0-7, free: 0-5, memory: 32Gi}]}}`"""
    out = []
    for name, spec in (case.get("node_reports") or {}).items():
        spec = dict(spec)
        numa = tuple(NumaCell(i, frozenset(_cpus(c["cpus"])), frozenset(_cpus(c.get("free", c["cpus"]))),
                              float(parse_quantity(c.get("memory", "32Gi"))), float(parse_quantity(c.get("memory_free", c.get("memory", "32Gi")))))
                     for i, c in enumerate(spec.pop("numa", [])))
        usage = {k: spec.pop(k) for k in ("cpu_usage", "memory_usage") if k in spec}
        out.append(NodeData(
            node=name, reported_at=now - timedelta(seconds=spec.pop("age", 5)),
            cpu_manager_policy=spec.pop("cpu_manager", ""), topology_manager_policy=spec.pop("topology_manager", ""),
            numa=numa,
            cpu_usage=float(parse_quantity(usage["cpu_usage"])) * 1000 if "cpu_usage" in usage else None,
            memory_usage=float(parse_quantity(usage["memory_usage"])) if "memory_usage" in usage else None,
            batch_cpu=float(spec.pop("batch_cpu", 0)), batch_memory=float(parse_quantity(spec.pop("batch_memory", 0))),
            gpus=tuple(GpuCard(i, 0.0, 0.0, i not in spec.get("unhealthy_gpus", ())) for i in range(spec.pop("gpus", 0))),
            gpu_status="ok"))
        spec.pop("unhealthy_gpus", None)
        assert not spec, f"unknown node report shorthand keys {list(spec)}"
    return out


def _cpus(text: object) -> list[int]:
    return parse_index_list(str(text), "node_reports numa cpus", 4096)


def run_case(case: dict[str, Any]) -> tuple[SimulationResult, ClusterCache]:
    conf = load_config(case.get("config") or DEFAULT_CONF_YAML, "scenario config")
    conf = replace(conf, features=parse_feature_gates(case.get("features", ""), "scenario features"))
    cache = ClusterCache()
    load_into(cache, Manifests(objects=[("scenario", o) for o in objects_of(case)]))
    start = parse_time(case.get("now", "2026-01-01T01:00:00Z"), "scenario now")
    for data in node_data_of(case, start):
        cache.set_node_data(data)
    return simulate(cache, conf, case.get("cycles", 1), start), cache


def check(case: dict[str, Any], result: SimulationResult) -> None:
    expect = case.get("expect") or {}
    if "binds" in expect:
        assert result.binds == (expect["binds"] or {})
    for pod, notes in (expect.get("annotations") or {}).items():
        assert {k: result.annotations.get(pod, {}).get(k) for k in notes} == notes, result.annotations.get(pod)
    if "bound_count" in expect:
        assert len(result.binds) == expect["bound_count"]
    if "evictions" in expect:
        assert sorted(result.evictions) == sorted(expect["evictions"] or [])
    if "ungated" in expect:
        assert result.ungated == (expect["ungated"] or [])
    if "pipelined" in expect:
        assert result.pipelined == (expect["pipelined"] or {})
    for pg, phase in (expect.get("phases") or {}).items():
        assert result.podgroups[pg]["phase"] == phase, f"{pg}: {result.podgroups[pg]}"
    for pod, text in (expect.get("pending") or {}).items():
        assert text in result.pending.get(pod, ""), f"{pod}: {result.pending.get(pod)!r}"
    for obj, text in (expect.get("faults") or {}).items():
        assert text in result.faults.get(obj, ""), f"{obj}: {result.faults}"
    for pg, text in (expect.get("conditions") or {}).items():
        messages = [c.get("message", "") for c in result.podgroups[pg]["conditions"] if c["type"] == "Unschedulable"]
        if text is None:
            assert not messages, f"{pg}: {messages}"
        else:
            assert any(text in m for m in messages), f"{pg}: {messages}"
