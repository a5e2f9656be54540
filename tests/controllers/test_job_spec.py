"""The typed job spec (parsed once per spec change) and the PodGroup half of a job's sync."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from central.admission.jobs import mutate_job
from central.controllers.job_podgroup import sync_podgroup
from central.controllers.jobs import reconcile
from central.errors import InputError
from central.model.jobs import expand_job
from central.model.jobspec import job_spec, parse_job
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
    assert sync_podgroup(spec, old, 2) == type(sync_podgroup(spec, old, 2))(delete="train")
    old["metadata"] = dict(old["metadata"], deletionTimestamp="2026-01-01T00:00:00Z")
    assert sync_podgroup(spec, old, 2).delete is None  # already going


def test_min_resources_count_the_first_min_member_pods_in_task_order() -> None:
    ps = task("ps", 2)
    ps["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    worker = task("worker", 3)
    worker["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    podgroup = sync_podgroup(parse_job(job(tasks=[ps, worker], minAvailable=4)), None, 0).create
    assert podgroup is not None and podgroup["spec"]["minResources"] == {"cpu": "2500m"}


def test_a_jobs_unprefixed_sla_waiting_time_reaches_its_podgroup() -> None:
    """Volcano's sla plugin reads `sla-waiting-time` when `volcano.sh/sla-waiting-time` is absent."""
    j = admitted()
    j["metadata"]["annotations"] = {"sla-waiting-time": "30m"}
    assert job_spec(j).carried == {"sla-waiting-time": "30m"}
