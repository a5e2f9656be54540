"""PodGroup statuses as the API and the Go client see them: what a session writes, and when."""

from __future__ import annotations

from typing import Any

import pytest

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.parse import parse_podgroup
from central.model.pgstatus import as_written, semantic
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

CONF = load_config("""
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}]
""")
SCHEDULED = {"type": "Scheduled", "status": "True", "transitionID": "s1", "reason": "tasks in gang are ready",
             "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(("ours", "theirs", "same"), [
    pytest.param({"phase": "Running", "running": 2, "succeeded": 0, "conditions": [SCHEDULED]},
                 {"phase": "Running", "running": 2, "conditions": [{k: v for k, v in SCHEDULED.items() if v}]},
                 True, id="go-omitempty-copy-is-the-same"),
    pytest.param({"phase": "Running", "conditions": [SCHEDULED]},
                 {"phase": "Running", "conditions": [dict(SCHEDULED, transitionID="s9", lastTransitionTime="x")]},
                 True, id="session-stamps-ignored"),
    pytest.param({"phase": "Running", "running": 2}, {"phase": "Running", "running": 3}, False, id="counts"),
    pytest.param({}, {"phase": "Pending"}, False, id="no-phase-is-not-pending-as-in-go"),
    pytest.param({"phase": "Running", "conditions": [SCHEDULED]},
                 {"phase": "Running", "conditions": [dict(SCHEDULED, reason="other")]}, False, id="condition"),
])
def test_statuses_compare_as_volcano_s_go_types(ours: dict, theirs: dict, same: bool) -> None:
    assert (semantic(ours) == semantic(theirs)) is same


def test_written_as_go_writes_it() -> None:
    assert as_written({"phase": "Running", "running": 0, "failed": 1, "conditions": [SCHEDULED]}) == {
        "phase": "Running", "failed": 1, "conditions": [{k: v for k, v in SCHEDULED.items() if k != "message"}]}


def cache_of(case: dict[str, Any]) -> ClusterCache:
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    return cache


def test_counts_that_changed_are_written_with_nothing_else_changed() -> None:
    """After a restart the PodGroup says running 1 while 2 run: the session writes it once."""
    case = {"nodes": {"n1": {"cpu": 4, "memory": "8Gi"}},
            "podgroups": {"ns/g": {"minMember": 2, "phase": "Running"}},
            "pods": {f"ns/g-{i}": {"group": "g", "cpu": 1, "node": "n1", "phase": "Running"} for i in range(2)}}
    cache = cache_of(case)
    job = cache.jobs["ns/g"]
    job.conditions = [SCHEDULED]
    job.reported = semantic({"phase": "Running", "running": 1, "conditions": [SCHEDULED]})
    first = run_cycle(cache, CONF)
    assert first.changed_podgroups == {"ns/g"} and first.podgroups["ns/g"]["running"] == 2
    assert run_cycle(cache, CONF).changed_podgroups == set()  # written: not again


def test_a_plain_pods_group_is_scheduled_but_never_written() -> None:
    """A pod without a PodGroup gets a group in the session only (the PodGroup controller makes
    the object, under another name): no status write for it, which would only meet a 404."""
    case = {"nodes": {"n1": {"cpu": 4, "memory": "8Gi"}}, "pods": {"ns/plain": {"cpu": 1}},
            "podgroups": {"ns/g": {"minMember": 1}}}
    case["pods"]["ns/g-0"] = {"group": "g", "cpu": 1}
    result = run_cycle(cache_of(case), CONF)
    assert set(result.binds) == {"ns/plain", "ns/g-0"}
    assert "ns/podgroup-plain" in result.podgroups and result.changed_podgroups == {"ns/g"}


def test_a_podless_podgroup_held_at_enqueue_gets_pending_and_why() -> None:
    case = {"nodes": {"n1": {"cpu": 4, "memory": "8Gi"}},
            "queues": {"small": {"weight": 1, "capability": {"cpu": 2}}},
            "podgroups": {"ns/big": {"minMember": 2, "queue": "small", "minResources": {"cpu": 3}}}}
    cache = cache_of(case)
    cache.jobs["ns/big"].reported = semantic({})  # as an operator creates it: `status: {}`
    result = run_cycle(cache, CONF)
    status = result.podgroups["ns/big"]
    assert "ns/big" in result.changed_podgroups and status["phase"] == "Pending"
    [condition] = status["conditions"]
    assert (condition["type"], condition["reason"]) == ("Unschedulable", "NotEnoughResources")
    assert "it can never be admitted (cpu: the job needs 3, more than the queue's capability 2)" in condition["message"]
    assert result.unschedulable["ns/big"] == condition["message"]  # told as an Event too


def test_quota_only_min_resources_are_not_scheduled_on() -> None:
    job = parse_podgroup({"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minResources": {
        "cpu": "2", "pods": "2", "count/pods": "2", "requests.cpu": "2", "limits.cpu": "4",
        "nvidia.com/gpu": "1", "requests.nvidia.com/gpu": "1"}}})
    assert set(job.min_resources or {}) == {"cpu", "nvidia.com/gpu"}


def test_the_pods_of_a_job_its_jobvalid_refuses_are_told_apart():
    """A gang short of pods: why its pods wait is kept, but they are listed apart, so that the
    scheduler writes them no PodScheduled condition (Volcano leaves such a job out of its
    session). A gang that is whole but does not fit is not."""
    cache = ClusterCache()
    for obj in objects_of({
        "nodes": {"n1": {"cpu": 2, "memory": "4Gi"}},
        "podgroups": {"ns/short": {"minMember": 3}, "ns/big": {"minMember": 2}},
        "pods": {"ns/short-0": {"group": "short", "cpu": 1}, "ns/short-1": {"group": "short", "cpu": 1},
                 "ns/big-0": {"group": "big", "cpu": 2}, "ns/big-1": {"group": "big", "cpu": 2}},
    }):
        cache.apply(obj)
    result = run_cycle(cache, load_config(DEFAULT_CONF_YAML))
    assert set(result.pending_reasons) == {"ns/short-0", "ns/short-1", "ns/big-0", "ns/big-1"}
    assert result.invalid_job_pods == {"ns/short-0", "ns/short-1"}


def test_a_pod_that_asks_for_nothing_says_it_waits_for_backfill_where_there_is_none() -> None:
    """Gang counts it ready, as Volcano does (backfill places such pods), so its PodGroup is
    Scheduled; its pending reason names the action the configuration lacks."""
    case = {"nodes": {"n1": {"cpu": 4, "memory": "8Gi"}}, "podgroups": {"ns/g": {"minMember": 1}},
            "pods": {"ns/g-0": {"group": "g"}}}
    without = run_cycle(cache_of(case), load_config('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'))
    assert without.binds == {}
    assert "only the backfill action places such a pod" in without.pending_reasons["ns/g-0"]
    assert set(run_cycle(cache_of(case), load_config(DEFAULT_CONF_YAML)).binds) == {"ns/g-0"}  # Volcano's default: backfill
