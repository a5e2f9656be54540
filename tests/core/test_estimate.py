"""Start-time estimates and explanations from the forward run of the cycle."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.scheduler import load_config
from central.scheduler.estimate import explain
from central.sim.manifests import Manifests, load_into

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
PRIORITY_CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def node(name: str, cpu: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}


def group(name: str, members: int, phase: str = "Inqueue", queue: str = "default", created: str = "23:00",
          **spec: Any) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "ns", "creationTimestamp": f"2025-12-31T{created}:00Z"},
            "spec": {"minMember": members, "queue": queue, **spec}, "status": {"phase": phase}}


def pod(name: str, podgroup: str, cpu: str, node: str = "", estimate: str = "", priority: int = 0) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": podgroup, **({"caldera.sh/running-estimate": estimate} if estimate else {})}
    spec: dict[str, Any] = {"schedulerName": "volcano", "priority": priority,
                            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": annotations,
                                        "creationTimestamp": "2025-12-31T23:00:00Z"},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def cluster(*objects: dict[str, Any], queues: tuple[dict[str, Any], ...] = ()) -> ClusterCache:
    cache = ClusterCache()
    default = {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}}
    load_into(cache, Manifests(objects=[("test", o) for o in (default, *queues, *objects)]))
    return cache


def test_a_gang_starts_when_the_running_pods_before_it_end() -> None:
    cache = cluster(node("n1", "8"), group("running", 1, "Running"), pod("r0", "running", "6", "n1", estimate="30m"),
                    group("next", 2, created="23:10"), pod("next-0", "next", "3"), pod("next-1", "next", "3"),
                    group("after", 2, created="23:20"), pod("after-0", "after", "4"), pod("after-1", "after", "4", estimate="1h"))
    out = explain(cache, load_config(DEFAULT_CONF_YAML), NOW)
    nxt, after = out["ns/next"], out["ns/after"]
    assert (nxt.position, after.position, nxt.waiting_in_queue) == (1, 2, 2)
    assert nxt.estimated_start == NOW + timedelta(minutes=30)  # when r0 is expected to end
    assert after.estimated_start == NOW + timedelta(minutes=90)  # next's pods run the 1 h default, then after fits
    assert "gang unschedulable" in nxt.reason and "running pods ending" in nxt.unblock
    # the cache is untouched: the run was on a copy
    assert cache.tasks["ns/r0"].status == TaskStatus.RUNNING and cache.jobs["ns/next"].count(TaskStatus.PENDING) == 2


def test_a_pod_bigger_than_any_node_can_never_fit() -> None:
    cache = cluster(node("n1", "8"), node("n2", "4"), group("huge", 1), pod("huge-0", "huge", "16"))
    [e] = explain(cache, load_config(DEFAULT_CONF_YAML), NOW).values()
    assert e.estimated_start is None
    assert e.unblock == "can never fit: pod huge-0 asks cpu 16, more than any node has allocatable (at most 8)"


def test_a_queue_capability_below_the_gang_is_named() -> None:
    capped = {"kind": "Queue", "metadata": {"name": "small"}, "spec": {"weight": 1, "capability": {"cpu": "2"}}}
    cache = cluster(node("n1", "8"), group("wide", 2, queue="small"), pod("w0", "wide", "2"), pod("w1", "wide", "2"),
                    queues=(capped,))
    [e] = explain(cache, load_config(DEFAULT_CONF_YAML), NOW).values()
    assert e.estimated_start is None and "its capability cpu 2 is below the gang's minimum cpu 4" in e.unblock


def test_preemption_in_the_forward_run_is_what_unblocks_a_high_priority_job() -> None:
    high = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    cache = cluster(high, node("n1", "4"), group("low", 1, "Running"), pod("low-0", "low", "2", "n1", estimate="10h"),
                    pod("low-1", "low", "2", "n1", estimate="10h"),  # gang keeps one of its two
                    group("urgent", 1, priorityClassName="high"), pod("urgent-0", "urgent", "2", priority=1000))
    [e] = explain(cache, load_config(PRIORITY_CONF), NOW, ["ns/urgent"]).values()
    assert e.estimated_start is not None and e.estimated_start < NOW + timedelta(hours=1)
    assert e.unblock.startswith("preemption or reclaim: 1 running pod(s) evicted")
