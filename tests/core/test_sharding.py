"""Sharded scheduling: node assignment to live schedulers and single ownership of a gang."""

from __future__ import annotations

import pytest

from central.controllers.sharding import API_VERSION, LeaseWatch, assign, cpu_utilisation, nodes_desired, nodeshard
from central.scheduler.shardowner import OWNER_ANNOTATION, claim, may_schedule, owner


def _nodes(n: int, utilisation: float | None = None) -> dict[str, float | None]:
    return {f"n{i:02d}": utilisation for i in range(n)}


def test_nodeshard_uses_volcanos_api_names():
    shard = nodeshard("sched-a", ["n2", "n1"], resource_version="7")
    assert shard["apiVersion"] == "shard.volcano.sh/v1alpha1" == API_VERSION
    assert shard["kind"] == "NodeShard"
    assert shard["spec"] == {"nodesDesired": ["n1", "n2"]}
    assert shard["metadata"] == {"name": "sched-a", "resourceVersion": "7"}
    assert nodes_desired(shard) == {"n1", "n2"}
    assert nodes_desired(None) is None


def test_every_node_goes_to_exactly_one_scheduler_with_balanced_counts():
    result = assign(_nodes(7), ["a", "b"], {})
    assert sorted(result["a"] + result["b"]) == sorted(_nodes(7))
    assert not set(result["a"]) & set(result["b"])
    assert sorted(len(v) for v in result.values()) == [3, 4]


def test_assignment_is_sticky():
    first = assign(_nodes(6), ["a", "b"], {})
    assert assign(_nodes(6), ["a", "b"], first) == first


def test_a_dead_schedulers_nodes_move_to_the_live_one():
    first = assign(_nodes(6), ["a", "b"], {})
    after = assign(_nodes(6), ["b"], first)
    assert after == {"b": sorted(_nodes(6))}


def test_a_joining_scheduler_gets_its_share_with_few_moves():
    alone = assign(_nodes(6), ["a"], {})
    both = assign(_nodes(6), ["a", "b"], alone)
    assert len(both["a"]) == len(both["b"]) == 3
    assert set(both["a"]) <= set(alone["a"])


def test_free_nodes_go_by_free_cpu_when_utilisation_is_known_else_by_count():
    known: dict[str, float | None] = {"idle": 0.0, "busy": 0.9, "new": 0.5}
    current = {"a": ["idle"], "b": ["busy"]}
    # b holds less free CPU (0.1 against 1.0): the new node goes to b
    assert assign(known, ["a", "b"], current) == {"a": ["idle"], "b": ["busy", "new"]}
    # one node's utilisation unknown: balanced counts, ties by name
    unknown: dict[str, float | None] = dict(known, new=None)
    assert assign(unknown, ["a", "b"], current) == {"a": ["idle", "new"], "b": ["busy"]}


def test_nodes_that_left_the_cluster_are_dropped_and_no_schedulers_means_no_shards():
    assert assign({"n1": None}, ["a"], {"a": ["n1", "gone"]}) == {"a": ["n1"]}
    assert assign(_nodes(3), [], {}) == {}


def test_cpu_utilisation_is_requests_over_allocatable():
    assert cpu_utilisation(500, 2000) == 0.25
    assert cpu_utilisation(5000, 2000) == 1.0
    assert cpu_utilisation(1, 0) == 1.0


def test_a_scheduler_is_dead_after_a_lease_duration_without_renewal():
    watch = LeaseWatch()
    watch.observe("a", "rv1", 15.0, now=100.0)
    watch.observe("b", "rv1", 15.0, now=100.0)
    watch.observe("a", "rv2", 15.0, now=110.0)  # a renews, b does not
    watch.observe("b", "rv1", 15.0, now=110.0)
    assert watch.live(114.0) == {"a", "b"}
    assert watch.live(116.0) == {"a"}
    watch.forget("a")
    assert watch.live(116.0) == set()


def _podgroup(owner_name: str | None = None, rv: str | None = "5") -> dict:
    metadata: dict = {"name": "pg", "namespace": "ns"}
    if rv is not None:
        metadata["resourceVersion"] = rv
    if owner_name:
        metadata["annotations"] = {OWNER_ANNOTATION: owner_name}
    return {"metadata": metadata, "spec": {"minMember": 4}}


def test_without_sharding_every_gang_is_schedulable():
    assert may_schedule(_podgroup(), None)
    assert may_schedule(_podgroup("a"), None)


def test_a_gang_is_claimed_by_a_conditional_update_and_then_only_its_owner_schedules_it():
    update = claim(_podgroup(), "a", live={"a", "b"})
    assert update is not None
    assert owner(update) == "a" and update["metadata"]["resourceVersion"] == "5"
    assert may_schedule(update, "a") and not may_schedule(update, "b")
    assert claim(update, "b", live={"a", "b"}) is None
    assert claim(update, "a", live={"a", "b"}) is None


def test_a_dead_owners_gang_may_be_taken_over():
    update = claim(_podgroup("a"), "b", live={"b"})
    assert update is not None and owner(update) == "b"


def test_an_unconditional_claim_is_refused():
    with pytest.raises(ValueError):
        claim(_podgroup(rv=None), "a", live={"a"})
