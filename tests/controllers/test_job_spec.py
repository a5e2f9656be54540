"""The typed job spec (parsed once per spec change) and the PodGroup half of a job's sync."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from central.admission.jobs import mutate_job
from central.controllers.job_podgroup import job_podgroup, sync_podgroup
from central.controllers.jobs import reconcile
from central.errors import InputError
from central.model.jobs import expand_job
from central.model.jobspec import job_spec, parse_job
from central.model.parse import parse_pod, parse_podgroup
from central.model.subgroups import sub_groups
from tests.builders import job, task


def admitted(**spec: Any) -> dict[str, Any]:
    out = mutate_job(job(**spec))
    out["metadata"].update(uid="uid-1", generation=1)
    return out


def test_the_spec_carries_every_field_the_controller_reads() -> None:
    j = admitted(
        tasks=[task("ps", policies=[{"event": "PodFailed", "action": "RestartTask"}]),
               task("worker", 3, minAvailable=2, dependsOn={"name": ["ps"], "iteration": "any"})],
        minSuccess=2, ttlSecondsAfterFinished=60, policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        plugins={"svc": ["--disable-network-policy"]}, priorityClassName="high",
        volumes=[{"mountPath": "/d", "volumeClaimName": "shared"}, {"mountPath": "/c", "volumeClaim": {}}],
        networkTopology={"mode": "hard", "highestTierAllowed": 2},
    )
    spec = parse_job(j)
    ps, worker = spec.tasks
    assert (spec.min_available, spec.min_success, spec.max_retry, spec.ttl_after_finished) == (3, 2, 3, 60)
    assert (worker.replicas, worker.min_available, worker.declares_min_available) == (3, 2, True)
    assert (worker.depends_on, worker.depends_on_any, ps.depends_on) == (("ps",), True, ())
    # a task's own policies are tried before the job's
    assert [p["action"] for p in ps.policies] == ["RestartTask", "RestartJob"]
    assert [c.name for c in spec.claims] == ["shared", "train-volume-1"] and spec.claims[0].create is None
    assert spec.plugins == {"svc": ["--disable-network-policy"]} and spec.priority_class == "high"
    assert spec.network_topology == {"mode": "hard", "highestTierAllowed": 2}


def test_the_spec_shares_nothing_with_the_job() -> None:
    j = admitted()
    spec = parse_job(j)
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert spec.tasks[0].template["spec"]["containers"][0]["image"] == "busybox"


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        pytest.param({"tasks": []}, "spec.tasks", id="no-tasks"),
        pytest.param({"tasks": [task("a", replicas=-1)]}, "spec.tasks[0].replicas", id="negative-replicas"),
        pytest.param({"tasks": [task("a"), {"name": "b"}]}, "spec.tasks[1].template.spec", id="no-template"),
        pytest.param({"minSuccess": "two"}, "spec.minSuccess", id="min-success"),
        pytest.param({"ttlSecondsAfterFinished": -5}, "spec.ttlSecondsAfterFinished", id="ttl"),
        pytest.param({"policies": {"event": "PodFailed"}}, "spec.policies", id="policies-not-a-list"),
        pytest.param({"networkTopology": "hard"}, "spec.networkTopology", id="topology-not-a-map"),
    ],
)
def test_a_bad_field_is_named(spec: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError) as err:
        parse_job(job(**spec))
    assert err.value.where == where


def test_a_job_that_cannot_be_read_is_reported_not_raised() -> None:
    j = admitted()
    j["spec"]["tasks"][1]["replicas"] = "many"
    j["status"] = {"state": {"phase": "Pending"}, "conditions": [{"status": "Pending"}]}
    given = copy.deepcopy(j)
    d = reconcile(j, None, [], 0.0)
    assert j == given  # the status it returns is its own
    assert d.status["state"]["reason"] == "InvalidJob" and "spec.tasks[1].replicas" in d.status["state"]["message"]
    assert d.create_podgroup is None and d.create_pods == []


def test_the_spec_is_parsed_again_only_when_it_changed() -> None:
    j = admitted()
    first = job_spec(j)
    assert job_spec(j) is first  # the same object: a pod event
    assert job_spec(copy.deepcopy(j)) is not first  # a new object read from the API
    j["spec"]["tasks"][1]["replicas"] = 5
    j["metadata"]["generation"] = 2  # what the API does on a spec change
    assert job_spec(j).tasks[1].replicas == 5
    j["metadata"]["annotations"] = {"volcano.sh/preemptable": "true"}  # metadata: no new generation
    assert job_spec(j).carried == {"volcano.sh/preemptable": "true"}


def test_jobs_alike_in_name_uid_and_generation_do_not_share_a_spec() -> None:
    a, b = admitted(), admitted(tasks=[task("solo", 7)])
    assert job_spec(a).tasks[0].name == "ps"
    assert job_spec(b).tasks[0].replicas == 7


def test_podgroup_is_created_with_the_version_then_admits_pods_once_enqueued() -> None:
    spec = parse_job(admitted())
    first = sync_podgroup(spec, None, 2)
    assert first.create is not None and not first.pods_allowed
    assert first.create["metadata"]["annotations"]["volcano.sh/job-version"] == "2"
    assert first.create == {**expand_job(admitted(), 2)[0], "metadata": first.create["metadata"]}
    assert not sync_podgroup(spec, first.create, 2).pods_allowed  # still Pending
    enqueued = dict(first.create, status={"phase": "Inqueue"})
    assert sync_podgroup(spec, enqueued, 2) == type(first)(pods_allowed=True)


def test_a_podgroup_of_an_older_version_is_deleted_not_used() -> None:
    spec = parse_job(admitted())
    old = dict(sync_podgroup(spec, None, 1).create or {}, status={"phase": "Running"})
    assert sync_podgroup(spec, old, 2) == type(sync_podgroup(spec, old, 2))(delete="train-uid-1")
    old["metadata"] = dict(old["metadata"], deletionTimestamp="2026-01-01T00:00:00Z")
    assert sync_podgroup(spec, old, 2).delete is None  # already going


def test_min_resources_count_the_first_min_member_pods_in_task_order() -> None:
    ps = task("ps", 2)
    ps["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    worker = task("worker", 3)
    worker["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    podgroup = sync_podgroup(parse_job(job(tasks=[ps, worker], minAvailable=4)), None, 0).create
    # 2 ps x 1 cpu + 2 workers x 250m, with the quota keys Volcano writes
    assert podgroup is not None and podgroup["spec"]["minResources"] == {
        "count/pods": "4", "cpu": "2500m", "pods": "4", "requests.cpu": "2500m"}


def test_min_resources_take_each_task_s_min_available_first_as_volcano() -> None:
    ps = task("ps", 4, minAvailable=1)
    ps["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}, "limits": {"cpu": "1", "memory": "1Gi"}}
    worker = task("worker", 2, minAvailable=2)
    worker["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2", "ephemeral-storage": "1Gi"}}
    podgroup = sync_podgroup(parse_job(admitted(tasks=[ps, worker], minAvailable=3)), None, 0).create
    # minAvailable 3 = 1 + 2 (the tasks' minAvailable): 1 ps + 2 workers, not the first 3 pods
    # (3 ps); cpu 500m + 2 x 2 = 4500m; limits only where set (the ps: 1 cpu, 1Gi)
    assert podgroup is not None and podgroup["spec"]["minResources"] == {
        "count/pods": "3", "pods": "3", "cpu": "4500m", "requests.cpu": "4500m", "limits.cpu": "1",
        "memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "1Gi",
        "ephemeral-storage": "2Gi", "requests.ephemeral-storage": "2Gi",
        "nvidia.com/gpu": "1", "requests.nvidia.com/gpu": "1"}


def test_the_podgroup_carries_the_job_s_annotations_and_labels() -> None:
    j = admitted()
    j["metadata"]["annotations"] = {"example.com/owner": "team-a", "volcano.sh/preemptable": "true"}
    j["metadata"]["labels"] = {"app": "train"}
    podgroup = sync_podgroup(parse_job(j), None, 3).create
    assert podgroup is not None
    assert podgroup["metadata"]["name"] == "train-uid-1"
    assert podgroup["metadata"]["labels"] == {"app": "train"}
    assert podgroup["metadata"]["annotations"] == {"example.com/owner": "team-a", "volcano.sh/preemptable": "true",
                                                   "volcano.sh/job-version": "3"}


def test_a_changed_label_is_read_again() -> None:
    j = admitted()
    first = job_spec(j)
    j["metadata"]["labels"] = {"app": "x"}
    assert job_spec(j) is not first and job_spec(j).labels == {"app": "x"}


@pytest.mark.parametrize(("present", "found"), [
    pytest.param(["ml/train-uid-1", "ml/train"], "ml/train-uid-1", id="volcano-name-first"),
    pytest.param(["ml/train"], "ml/train", id="an-older-podgroup-adopted"),
    pytest.param(["ml/other"], None, id="none"),
])
def test_the_job_s_podgroup_is_found_by_volcano_s_name_or_adopted(present: list[str], found: str | None) -> None:
    podgroups = {key: {"metadata": {"name": key.split("/")[1], "namespace": "ml"}} for key in present}
    got = job_podgroup(podgroups, admitted())
    assert (None if got is None else f"ml/{got['metadata']['name']}") == found


def test_pods_of_an_adopted_podgroup_join_it() -> None:
    j = admitted()
    pg = dict(sync_podgroup(parse_job(j), None, 0).create or {}, status={"phase": "Inqueue"})
    pg["metadata"] = dict(pg["metadata"], name="train")  # made before the rename
    d = reconcile(j, pg, [], 0.0)
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in d.create_pods} == {"train"}
    assert d.create_podgroup is None


def test_a_jobs_unprefixed_sla_waiting_time_reaches_its_podgroup() -> None:
    """Volcano's sla plugin reads `sla-waiting-time` when `volcano.sh/sla-waiting-time` is absent."""
    j = admitted()
    j["metadata"]["annotations"] = {"sla-waiting-time": "30m"}
    assert job_spec(j).carried == {"sla-waiting-time": "30m"}


def test_a_partitioned_task_gives_its_pods_a_partition_and_the_podgroup_a_sub_group() -> None:
    """As Volcano's job controller: partition-id = index / partitionSize on each pod, and one
    subGroupPolicy per partitioned task, which the scheduler reads back into sub-groups."""
    topology = {"mode": "hard", "highestTierAllowed": 1}
    j = admitted(tasks=[task("ps"), task("worker", 4, partitionPolicy={
        "totalPartitions": 2, "partitionSize": 2, "minPartitions": 1, "networkTopology": topology})])
    podgroup, pods = expand_job(j, 0)
    assert podgroup["spec"]["subGroupPolicy"] == [{
        "name": "worker", "subGroupSize": 2, "minSubGroups": 1,
        "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
        "matchLabelKeys": ["volcano.sh/partition-id"], "networkTopology": topology}]
    assert podgroup["spec"]["minTaskMember"]["worker"] == 2  # minPartitions x partitionSize
    partitions = {p["metadata"]["name"]: p["metadata"]["labels"].get("volcano.sh/partition-id") for p in pods}
    assert partitions == {"train-ps-0": None, "train-worker-0": "0", "train-worker-1": "0",
                          "train-worker-2": "1", "train-worker-3": "1"}
    policies = parse_podgroup({**podgroup, "metadata": {**podgroup["metadata"]}}).sub_group_policies
    tasks = [parse_pod(p)[0] for p in pods]
    groups = sub_groups(policies, tasks)
    assert {key: [t.name for t in g.tasks] for key, g in groups.items()} == {
        "worker-0": ["train-worker-0", "train-worker-1"], "worker-1": ["train-worker-2", "train-worker-3"]}
    assert policies[0].network_topology is not None and policies[0].network_topology.highest_tier == 1
