"""The cache's ResourceQuotas and PodDisruptionBudgets follow their objects: a change or a
deletion decides the next cycle (the scheduler's informers feed both kinds)."""

from __future__ import annotations

from datetime import datetime, timezone

from central.model.cache import ClusterCache
from central.model.parse import parse_pod
from central.scheduler import load_config
from central.scheduler.loop import WATCHED
from central.sim.manifests import Manifests, load_into
from central.sim.simulate import simulate
from tests.scenarios.harness import objects_of

START = datetime(2026, 1, 1, 1, 0, tzinfo=timezone.utc)
QUOTA_CONF = load_config('actions: "enqueue"\ntiers:\n- plugins: [{name: resourcequota}]\n', "test")
PDB_CONF = load_config('actions: "preempt"\ntiers:\n- plugins: [{name: priority}, {name: gang}, {name: pdb}]\n'
                       "- plugins: [{name: predicates}, {name: proportion}]\n", "test")


def _quota(cpu: str) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq", "namespace": "ns"},
            "status": {"hard": {"cpu": cpu}}}


def _pdb(allowed: int) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "low"}}}, "status": {"disruptionsAllowed": allowed}}


def _cache(case: dict) -> ClusterCache:
    cache = ClusterCache()
    load_into(cache, Manifests(objects=[("test", o) for o in objects_of(case)]))
    return cache


def test_a_quota_changed_or_deleted_decides_the_next_cycle():
    cache = _cache({"nodes": {"n1": {"cpu": 8, "memory": "8Gi"}},
                    "podgroups": {"ns/pg": {"minMember": 1, "queue": "default", "minResources": {"cpu": 2}}}})
    cache.apply(_quota("1"))
    assert simulate(cache, QUOTA_CONF, 1, START).podgroups["ns/pg"]["phase"] == "Pending"
    cache.apply(_quota("500m"))
    assert list(cache.quotas["ns"]) == ["rq"] and simulate(cache, QUOTA_CONF, 1, START).podgroups["ns/pg"]["phase"] == "Pending"
    cache.delete("ResourceQuota", "ns", "rq")
    assert cache.quotas == {}
    assert simulate(cache, QUOTA_CONF, 1, START).podgroups["ns/pg"]["phase"] == "Inqueue"


def test_a_pdb_status_update_or_deletion_decides_the_next_cycle():
    def case() -> dict:
        return {"nodes": {"n1": {"cpu": 1, "memory": "8Gi"}},
                "objects": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}],
                "podgroups": {"ns/low": {"minMember": 0, "queue": "default", "phase": "Running"},
                              "ns/high": {"minMember": 1, "queue": "default", "priorityClassName": "high", "phase": "Inqueue"}},
                "pods": {"ns/low-0": {"group": "low", "cpu": 1, "memory": "1Gi", "node": "n1", "labels": {"app": "low"}},
                         "ns/high-0": {"group": "high", "cpu": 1, "memory": "1Gi"}}}
    cache = _cache(case())
    cache.apply(_pdb(0))
    assert simulate(cache, PDB_CONF, 1, START).evictions == []
    cache.apply(_pdb(1))
    assert simulate(cache, PDB_CONF, 1, START).evictions == ["ns/low-0"]
    cache = _cache(case())
    cache.apply(_pdb(0))
    cache.delete("PodDisruptionBudget", "ns", "pdb")
    assert simulate(cache, PDB_CONF, 1, START).evictions == ["ns/low-0"]


def test_the_scheduler_watches_both_kinds():
    assert WATCHED["ResourceQuota"] == "/api/v1/resourcequotas"
    assert WATCHED["PodDisruptionBudget"] == "/apis/policy/v1/poddisruptionbudgets"


def test_a_pod_remembers_when_it_was_scheduled():
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Running", "conditions": [
               {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:59:00Z"},
               {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:58:00Z"}]}}
    assert parse_pod(pod)[0].scheduled_at == "2026-01-01T00:58:00Z"
    pod["status"]["conditions"][1]["status"] = "False"
    assert parse_pod(pod)[0].scheduled_at == ""
