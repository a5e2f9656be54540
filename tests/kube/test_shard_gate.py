"""A sharded replica's cycle: only its NodeShard's nodes in its cache, a gang's binds sent only
under the gang's claim (a conditional PodGroup update), queue statuses only from the leader."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from central.controllers.sharding import SHARD_LABEL
from central.kube.client import ApiError
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.scheduler.feeder import CacheFeeder
from central.scheduler.shardowner import OWNER_ANNOTATION
from central.scheduler.shards import ClusterLeader, ShardGate, Sharding
from tests.builders import node, pod, podgroup


class FakeApi:
    """PodGroups by key, written back only when the resourceVersion matches (as the API server)."""

    def __init__(self, podgroups: dict[str, dict[str, Any]]):
        self.podgroups = podgroups
        self.puts: list[dict[str, Any]] = []

    def _key(self, url: str) -> str:
        parts = url.split("/")
        return f"{parts[-3]}/{parts[-1]}"

    def request(self, method: str, url: str, body: Any = None, **_: Any) -> dict[str, Any]:
        assert method == "PUT"
        key = self._key(url)
        current = self.podgroups[key]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        self.puts.append(copy.deepcopy(body))
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.podgroups[key] = stored
        return stored

    def get(self, url: str) -> dict[str, Any]:
        return copy.deepcopy(self.podgroups[self._key(url)])


class RecordingSink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.calls.append((name, args))


class NotLeading:
    leading = threading.Event()
    retry_period = 1.0


def _lease(shard: str, rv: str, holder: str = "h") -> dict[str, Any]:
    return {"metadata": {"name": f"vc-scheduler-{shard}", "labels": {SHARD_LABEL: shard}, "resourceVersion": rv},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}


def _cluster(owner: str | None = None) -> tuple[ClusterCache, dict[str, dict[str, Any]]]:
    cache = ClusterCache()
    for name in ("n1", "n2"):
        cache.apply(node(name))
    group = podgroup("g", "ml", min_member=2)
    group["metadata"]["resourceVersion"] = "5"
    group["status"] = {"phase": "Inqueue"}
    if owner:
        group["metadata"]["annotations"] = {OWNER_ANNOTATION: owner}
    cache.apply(group)
    for i in range(2):
        cache.apply(pod(f"g-{i}", "ml", group="g"))
    cache.apply(pod("solo", "ml"))
    return cache, {"ml/g": group}


def _gate(cache: ClusterCache, podgroups: dict[str, dict[str, Any]], leases: list[dict[str, Any]] = (),
          leading: bool = True) -> tuple[ShardGate, FakeApi, RecordingSink, Sharding]:
    api = FakeApi(copy.deepcopy(podgroups))
    sink = RecordingSink()
    leader = ClusterLeader(None if leading else NotLeading())  # type: ignore[arg-type]
    sharding = Sharding("a", leader, clock=lambda: 100.0)
    sharding.leases = {lease["metadata"]["name"]: lease for lease in leases}
    return ShardGate(sink, api, cache, sharding, podgroups), api, sink, sharding  # type: ignore[arg-type]


def test_a_gang_is_claimed_once_before_its_first_bind():
    cache, podgroups = _cluster()
    gate, api, sink, sharding = _gate(cache, podgroups)
    gate.bind("ml/g-0", "n1")
    gate.bind("ml/g-1", "n1")
    gate.bind("ml/solo", "n2")  # no PodGroup of its own to split: nothing claimed
    assert [p["metadata"]["annotations"][OWNER_ANNOTATION] for p in api.puts] == ["a"]
    assert api.puts[0]["metadata"]["resourceVersion"] == "5"  # conditional on what was read
    assert [c for c in sink.calls if c[0] == "bind"] == [("bind", ("ml/g-0", "n1")), ("bind", ("ml/g-1", "n1")),
                                                         ("bind", ("ml/solo", "n2"))]
    assert sharding.claimed == {"ml/g"}


def test_a_gang_held_by_a_live_scheduler_is_left_alone_and_its_placement_undone():
    cache, podgroups = _cluster(owner="b")
    gate, api, sink, _ = _gate(cache, podgroups, leases=[_lease("b", "1")])
    task = cache.tasks["ml/g-0"]
    cache.set_status(task, TaskStatus.BINDING, "n1")  # what the cycle charged
    gate.bind("ml/g-0", "n1")
    gate.update_podgroup_status("ml/g", {"phase": "Running"})
    assert api.puts == [] and sink.calls == []
    feeder = CacheFeeder(cache)
    gate.finish(feeder, {"ml/g-0": pod("g-0", "ml", group="g")})
    assert cache.tasks["ml/g-0"].status == TaskStatus.PENDING and cache.tasks["ml/g-0"].node is None
    assert cache.table.pods[cache.nodes["n1"].index] == 0


def test_a_lost_race_is_read_back_and_the_other_claim_kept():
    cache, podgroups = _cluster()
    gate, api, sink, _ = _gate(cache, podgroups, leases=[_lease("b", "1")])
    # replica b claimed it meanwhile; this replica's watch has not shown it yet
    api.podgroups["ml/g"]["metadata"].update(resourceVersion="6", annotations={OWNER_ANNOTATION: "b"})
    gate.bind("ml/g-0", "n1")
    assert api.puts == [] and gate.dropped == {"ml/g-0"}
    assert [c for c in sink.calls if c[0] == "bind"] == []


def test_a_dead_schedulers_claim_is_taken_over():
    cache, podgroups = _cluster(owner="b")  # b's Lease is gone
    gate, api, sink, _ = _gate(cache, podgroups)
    gate.bind("ml/g-0", "n1")
    assert api.puts[0]["metadata"]["annotations"][OWNER_ANNOTATION] == "a"
    assert ("bind", ("ml/g-0", "n1")) in sink.calls


def test_only_the_leader_writes_queue_status():
    cache, podgroups = _cluster()
    gate, _, sink, _ = _gate(cache, podgroups, leading=False)
    gate.update_queue_status("default", {"allocated": {}})
    gate.annotate_queue("default", {"x": "y"})
    assert sink.calls == []
    gate, _, sink, _ = _gate(cache, podgroups, leading=True)
    gate.update_queue_status("default", {"allocated": {}})
    assert [c[0] for c in sink.calls] == ["update_queue_status"]


def test_a_replica_that_does_not_lead_leaves_pending_jobs_to_the_leaders_enqueue():
    cache, podgroups = _cluster()
    pending = podgroup("waiting", "ml", min_member=1)
    cache.apply(pending)
    cache.apply(pod("w-0", "ml", group="waiting"))
    _, _, _, follower = _gate(cache, podgroups, leading=False)
    cache.job_filter = follower.job_filter(cache.jobs.values())
    assert {job.name for job in cache.iter_scheduling_jobs()} == {"g", "podgroup-solo"}  # solo: no PodGroup object
    _, _, _, leader = _gate(cache, podgroups, leading=True)
    cache.job_filter = leader.job_filter(cache.jobs.values())
    assert {job.name for job in cache.iter_scheduling_jobs()} == {"g", "podgroup-solo", "waiting"}


def test_the_claim_is_released_once_the_api_shows_the_gang_bound():
    cache, podgroups = _cluster(owner="a")
    gate, api, _, sharding = _gate(cache, podgroups)
    sharding.claimed.add("ml/g")
    cache.set_status(cache.tasks["ml/g-0"], TaskStatus.BINDING, "n1")
    cache.set_status(cache.tasks["ml/g-1"], TaskStatus.BOUND, "n1")
    sharding.release_done(api, cache, api.podgroups, threading.RLock())  # type: ignore[arg-type]
    assert api.puts == [] and sharding.claimed == {"ml/g"}  # one bind still in flight
    cache.set_status(cache.tasks["ml/g-0"], TaskStatus.BOUND, "n1")
    sharding.release_done(api, cache, api.podgroups, threading.RLock())  # type: ignore[arg-type]
    assert OWNER_ANNOTATION not in api.puts[-1]["metadata"]["annotations"]
    assert sharding.claimed == set() and sharding.released == 1


def test_a_claim_with_nothing_in_flight_is_released_for_another_shard_to_try():
    cache, podgroups = _cluster(owner="a")
    _, api, _, sharding = _gate(cache, podgroups)
    sharding.claimed.add("ml/g")
    sharding.release_done(api, cache, api.podgroups, threading.RLock())  # type: ignore[arg-type]
    assert sharding.claimed == set()


@pytest.mark.parametrize("leases, live", [([], {"a"}), ([_lease("b", "1")], {"a", "b"}),
                                          ([_lease("b", "1", holder="")], {"a"})])
def test_live_shards_come_from_the_labelled_leases(leases, live):
    cache, podgroups = _cluster()
    _, _, _, sharding = _gate(cache, podgroups, leases=leases)
    assert sharding.live() == live


def test_a_sharded_session_places_only_on_the_shards_nodes_and_keeps_the_others_in_its_totals():
    from central.framework.conf import DEFAULT_CONF_YAML
    from central.scheduler import load_config
    from central.scheduler.cycle import run_cycle

    cache = ClusterCache()
    for name in ("n1", "n2", "n3"):
        cache.apply(node(name, cpu="2"))
    cache.apply(pod("elsewhere", "ml", node="n1", cpu="2"))
    for i in range(4):
        cache.apply(pod(f"p{i}", "ml", cpu="1"))
    cache.shard = frozenset({"n2"})
    result = run_cycle(cache, load_config(DEFAULT_CONF_YAML, "default"))
    assert sorted(result.binds.values()) == ["n2", "n2"]
    assert "another scheduler's shard" in next(iter(result.pending_reasons.values()))
    cache.shard = frozenset()  # no NodeShard yet: nothing placed, nothing evicted
    result = run_cycle(cache, load_config(DEFAULT_CONF_YAML, "default"))
    assert result.binds == {} and result.evictions == {}


def test_a_claim_taken_over_meanwhile_is_no_longer_this_replicas():
    cache, podgroups = _cluster(owner="b")  # b took the gang over while this replica's Lease had lapsed
    gate, api, sink, sharding = _gate(cache, podgroups, leases=[_lease("b", "1")])
    sharding.claimed.add("ml/g")
    gate.bind("ml/g-0", "n1")
    assert api.puts == [] and sink.calls == [] and sharding.claimed == set()


def test_two_live_replicas_split_the_pending_jobs_and_take_the_others_share_once_it_waited():
    cache, podgroups = _cluster()
    for i in range(12):
        cache.apply(pod(f"p{i}", "ml"))
    now = [100.0]
    leases = [_lease("a", "1"), _lease("b", "1")]
    sharding = {name: Sharding(name, ClusterLeader(None), clock=lambda: now[0], share_after=3.0)
                for name in ("a", "b")}

    def session(name: str) -> set[str]:
        replica = sharding[name]
        replica.leases = {lease["metadata"]["name"]: lease for lease in leases}
        cache.job_filter = replica.job_filter(cache.jobs.values())
        return {job.name for job in cache.iter_scheduling_jobs()}

    first = {name: session(name) for name in ("a", "b")}
    pending = {job.name for job in cache.jobs.values()}
    assert first["a"] | first["b"] == pending and first["a"] & first["b"] == set()  # each job worked out once
    assert first["a"] and first["b"]
    cache.set_status(cache.tasks["ml/p0"], TaskStatus.BOUND, "n1")  # placed: its pods are everyone's usage
    now[0] += 2.0
    assert "podgroup-p0" in session("a") & session("b")
    now[0] += 1.5  # the other's share waited 3.5 s here: its owner could not place it
    assert session("a") == session("b") == pending
    leases.pop()  # b's Lease is gone: a takes every job at once
    assert session("a") == pending


def test_each_job_s_reasons_and_status_come_from_one_replica():
    """Two replicas see different nodes, so their why-pending reasons differ: only the replica
    whose share a job is tells them (the leader for a PodGroup waiting for its enqueue, the
    claim's holder for a claimed gang), or they would overwrite each other every cycle."""
    cache, podgroups = _cluster()
    for i in range(12):
        cache.apply(pod(f"p{i}", "ml"))
    waiting = podgroup("waiting", "ml", min_member=1)
    cache.apply(waiting)
    podgroups["ml/waiting"] = waiting
    leases = [_lease("a", "1"), _lease("b", "1")]
    reasons = {key: "0/2 nodes are available" for key in cache.tasks}
    told: dict[str, set[str]] = {}
    for name, leading in (("a", True), ("b", False)):
        sharding = Sharding(name, ClusterLeader(None if leading else NotLeading()),  # type: ignore[arg-type]
                            clock=lambda: 100.0)
        sharding.leases = {lease["metadata"]["name"]: lease for lease in leases}
        sharding.job_filter(cache.jobs.values())
        gate = ShardGate(RecordingSink(), FakeApi(copy.deepcopy(podgroups)), cache, sharding, podgroups)  # type: ignore[arg-type]
        told[name] = set(gate.pending(reasons))
        assert set(gate.unschedulable({"ml/waiting": "queue full"})) == ({"ml/waiting"} if leading else set())
    assert told["a"] | told["b"] == set(reasons) and told["a"] & told["b"] == set()
    assert told["a"] and told["b"]
