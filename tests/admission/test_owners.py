"""What the controllers create names an owner that exists: the pure decision and its cache."""

from __future__ import annotations

import pytest

from central.admission.owners import CONTROLLERS_USER, OwnerCache, OwnerUnreadable, review_owner

JOB_URL = "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/train"


def create(resource: str, owners: list[dict], group: str = "", user: str = CONTROLLERS_USER, task: str = "w",
           account: str | None = None) -> dict:
    return {"uid": "r1", "operation": "CREATE", "namespace": "ns", "userInfo": {"username": user},
            "resource": {"group": group, "version": "v1", "resource": resource},
            "object": {"metadata": {"name": "train-w-0", "ownerReferences": owners,
                                    "annotations": {"volcano.sh/task-spec": task}},
                       "spec": {"serviceAccountName": account} if account else {}}}


def ref(kind: str = "Job", uid: str = "u-1", api: str = "batch.volcano.sh/v1alpha1", controller: bool = True,
        name: str = "train") -> dict:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": controller}


def lookup(objects: dict[str, dict]):
    calls: list[str] = []

    def get(url: str, uid: str = "") -> dict | None:
        calls.append(url)
        return objects.get(url)
    get.calls = calls  # type: ignore[attr-defined]
    return get


EXISTING = lookup({JOB_URL: {"metadata": {"name": "train", "uid": "u-1"},
                            "spec": {"tasks": [{"name": "w", "template": {"spec": {}}},
                                               {"name": "ps", "template": {"spec": {"serviceAccountName": "ps-sa"}}}]}},
                   "/apis/flow.volcano.sh/v1alpha1/namespaces/ns/jobflows/train": {"metadata": {"uid": "f-1"}}})


@pytest.mark.parametrize("request_, allowed, message", [
    pytest.param(create("pods", [ref()]), True, None, id="pod-of-an-existing-job"),
    pytest.param(create("pods", [ref()], task="ps", account="ps-sa"), True, None, id="pod-as-its-tasks-account"),
    pytest.param(create("pods", [ref()], account="admin"), False, "runs as ServiceAccount 'admin', not its Job task 'w'",
                 id="pod-as-another-account"),
    pytest.param(create("pods", [ref()], task="nope"), False, "its Job has no task 'nope'", id="pod-of-no-task"),
    pytest.param(create("networkpolicies", [ref()], group="networking.k8s.io"), True, None, id="networkpolicy"),
    pytest.param(create("jobs", [ref("JobFlow", "f-1", "flow.volcano.sh/v1alpha1")], group="batch.volcano.sh"),
                 True, None, id="job-of-an-existing-jobflow"),
    pytest.param(create("pods", [ref(uid="forged")]), False, "has another uid than the reference's forged",
                 id="wrong-uid"),
    pytest.param(create("pods", [ref(name="gone")]), False, "Job ns/gone does not exist", id="missing-job"),
    pytest.param(create("pods", []), False, "only controlled by a Job (batch.volcano.sh)", id="no-owner"),
    pytest.param(create("pods", [ref(controller=False)]), False, "only controlled by", id="owner-not-controller"),
    pytest.param(create("pods", [ref("ReplicaSet", api="apps/v1")]), False, "only controlled by", id="other-kind"),
    pytest.param(create("pods", [ref("JobFlow", "f-1", "flow.volcano.sh/v1alpha1")]), False, "only controlled by",
                 id="pod-owned-by-a-jobflow"),
    pytest.param(create("jobs", [ref()], group="batch.volcano.sh"), False, "CronJob (batch.volcano.sh) or JobFlow",
                 id="job-owned-by-a-job"),
    pytest.param(create("secrets", [ref(name="../../secrets/x")]), False, "names no valid", id="name-is-a-path"),
    pytest.param(create("pods", [ref(uid="forged")], user="alice"), True, None, id="another-user-not-judged"),
])
def test_an_owner_must_exist_with_the_referenced_uid(request_, allowed, message):
    response = review_owner(request_, EXISTING)
    assert response["allowed"] is allowed and response["uid"] == "r1"
    if message:
        assert message in response["status"]["message"] and response["status"]["code"] == 403


def test_an_owner_that_cannot_be_read_is_refused():
    def failing(url: str, uid: str) -> dict | None:
        raise OwnerUnreadable("etcd is down")
    response = review_owner(create("pods", [ref()]), failing)
    assert not response["allowed"] and response["status"]["code"] == 503 and "etcd is down" in response["status"]["message"]


def test_the_cache_reads_an_owner_once_per_uid_and_forgets_it():
    now = [0.0]
    objects = {JOB_URL: {"metadata": {"uid": "u-1"}}}
    get = lookup(objects)
    cache = OwnerCache(get, ttl_s=30, clock=lambda: now[0])
    for _ in range(3):
        assert cache(JOB_URL, "u-1")["metadata"]["uid"] == "u-1"
    assert len(get.calls) == 1
    objects[JOB_URL] = {"metadata": {"uid": "u-2"}}  # deleted and created again under its name
    assert cache(JOB_URL, "u-2")["metadata"]["uid"] == "u-2" and len(get.calls) == 2
    del objects[JOB_URL]
    now[0] = 31.0  # past the ttl: read again, and found gone
    assert cache(JOB_URL, "u-2") is None and len(get.calls) == 3
    assert cache(JOB_URL, "u-2") is None and len(get.calls) == 4  # a missing owner is never remembered
