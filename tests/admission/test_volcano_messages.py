"""Every denial carries Volcano's own message for the same case, verbatim, beside Caldera's
field path and numbers: users' scripts and operators match on those texts.

One row per denial Volcano's admission e2e suite asserts on, with the text it asserts. Where
Volcano leaves the check to its CRD schema or its ValidatingAdmissionPolicies, the row holds
the API server's wording for that rule ("should be greater than or equal to 0"), since a
Caldera denial then stands in for it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from central.admission import Cluster, admit
from tests.builders import exact, hypernode, job, member, pod, queue

CLUSTER = Cluster.from_objects([queue("default", state="Open")])


def job_with(edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    obj = job(tasks=None)
    edit(obj)
    return obj


def spec(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda j: j["spec"].update(values)


def first_task(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda j: j["spec"]["tasks"][0].update(values)


def policies(*items: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return spec(policies=list(items))


def jdb(**values: str) -> dict[str, Any]:
    keys = {"min": "volcano.sh/jdb-min-available", "max": "volcano.sh/jdb-max-unavailable"}
    return pod(annotations={keys[k]: v for k, v in values.items()})


def hierarchy(path: str | None, weights: str | None) -> dict[str, Any]:
    notes = {k: v for k, v in (("volcano.sh/hierarchy", path), ("volcano.sh/hierarchy-weights", weights)) if v}
    return queue("q", annotations=notes, weight=1)


CPU_MEM = {"cpu": "1", "memory": "1Gi"}

CREATE = [
    # Jobs
    pytest.param(job_with(first_task(name="worker")), ["duplicated task name"], id="duplicate-task-names"),
    pytest.param(job_with(spec(minAvailable=-1)), ["spec.minAvailable", "should be greater than or equal to 0"],
                 id="job-min-available-negative"),
    pytest.param(job_with(spec(maxRetry=-1)), ["spec.maxRetry", "should be greater than or equal to 0"],
                 id="max-retry-negative"),
    pytest.param(job_with(spec(ttlSecondsAfterFinished=-1)),
                 ["spec.ttlSecondsAfterFinished", "should be greater than or equal to 0"], id="ttl-negative"),
    pytest.param(job_with(spec(tasks=[])), ["No task specified in job spec"], id="no-tasks"),
    pytest.param(job_with(first_task(replicas=-1)),
                 ["spec.tasks[0].replicas", "should be greater than or equal to 0"], id="task-replicas-negative"),
    pytest.param(job_with(first_task(minAvailable=-1)),
                 ["spec.tasks[0].minAvailable", "should be greater than or equal to 0"], id="task-min-negative"),
    pytest.param(job_with(first_task(minAvailable=2)), ["'minAvailable' is greater than 'replicas' in task"],
                 id="task-min-over-replicas"),
    pytest.param(job_with(spec(minAvailable=9)),
                 ["job 'minAvailable' should not be greater than total replicas in tasks"], id="job-min-over-total"),
    pytest.param(job_with(first_task(name="Task-1")), ["spec.tasks[0].name", "should match"], id="task-name-not-dns"),
    pytest.param(job_with(policies({"event": "PodFailed", "action": "AbortJob"},
                                   {"event": "PodFailed", "action": "RestartJob"})),
                 ["duplicate event PodFailed  across different policy"], id="duplicate-policy-events"),
    pytest.param(job_with(policies({"event": "PodFailed", "exitCode": 1, "action": "AbortJob"})),
                 ["must not specify event and exitCode simultaneously"], id="event-and-exit-code"),
    pytest.param(job_with(policies({"action": "AbortJob"})), ["either event and exitCode should be specified"],
                 id="neither-event-nor-exit-code"),
    pytest.param(job_with(policies({"event": "PodFailed", "action": "SomeInvalidAction"})),
                 ["invalid policy action"], id="invalid-action"),
    pytest.param(job_with(policies({"exitCode": 0, "action": "AbortJob"})), ["0 is not a valid error code"],
                 id="exit-code-zero"),
    pytest.param(job_with(policies({"exitCode": 1, "action": "AbortJob"}, {"exitCode": 1, "action": "RestartJob"})),
                 ["duplicate exitCode"], id="duplicate-exit-codes"),
    pytest.param(job_with(policies({"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"})),
                 ["if there's * here, no other policy should be here"], id="any-event-with-others"),
    pytest.param(job_with(spec(volumes=[{"mountPath": ""}])),
                 ["spec.volumes[0].mountPath", "should be at least 1 chars long"], id="empty-mount-path"),
    pytest.param(job_with(spec(volumes=[{"mountPath": "/var", "volumeClaimName": "pvc1"},
                                        {"mountPath": "/var", "volumeClaimName": "pvc2"}])),
                 ["duplicated mountPath"], id="duplicate-mount-paths"),
    pytest.param(job_with(spec(volumes=[{"mountPath": "/var"}])),
                 ["either VolumeClaim or VolumeClaimName must be specified"], id="volume-without-claim"),
    # Pods
    pytest.param(jdb(min="-1"), ["must be a positive integer"], id="jdb-negative"),
    pytest.param(jdb(min="0"), ["must be a positive integer"], id="jdb-zero"),
    pytest.param(jdb(max="0%"), ["percentage which between 1% ~ 99%"], id="jdb-zero-percent"),
    pytest.param(jdb(max="100%"), ["percentage which between 1% ~ 99%"], id="jdb-hundred-percent"),
    pytest.param(jdb(min="invalid"), ["must be a positive integer or a valid percentage which between 1% ~ 99%"],
                 id="jdb-not-a-number"),
    pytest.param(jdb(min="2", max="50%"), ["not allow configure multiple annotations at same time"],
                 id="jdb-both"),
    # Queues
    pytest.param(queue("q", weight=-1), ["spec.weight", "should be greater than or equal to 1"], id="weight-negative"),
    pytest.param(queue("q", weight=1, guarantee={"resource": CPU_MEM}), ["must be >= guarantee"],
                 id="guarantee-only"),
    pytest.param(queue("q", weight=1, capability=CPU_MEM, deserved={"cpu": "2", "memory": "1Gi"}),
                 ["must be <= capability"], id="capability-below-deserved"),
    pytest.param(queue("q", weight=1, capability=CPU_MEM, guarantee={"resource": {"cpu": "2", "memory": "3Gi"}}),
                 ["must be >= guarantee"], id="capability-below-guarantee"),
    pytest.param(queue("q", weight=1, deserved={"cpu": "2", "memory": "1Gi"},
                       guarantee={"resource": {"cpu": "2", "memory": "3Gi"}}),
                 ["must be >= guarantee"], id="deserved-below-guarantee"),
    pytest.param(queue("q", weight=1, deserved={"cpu": "10"}, guarantee={"resource": {"cpu": "5", "memory": "8Gi"}}),
                 ["must be >= guarantee"], id="guarantee-type-not-in-deserved"),
    pytest.param(hierarchy("a", None), ["volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights"],
                 id="hierarchy-without-weights"),
    pytest.param(hierarchy("a/b", "1/2/3"),
                 ["volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights"],
                 id="hierarchy-lengths-differ"),
    pytest.param(hierarchy("root/a/b", "1/2/3/4"), ["must have the same length"], id="hierarchy-weights-longer"),
    pytest.param(hierarchy("root/a/b", "1/-1/3"), ["weights in volcano.sh/hierarchy-weights must be larger than 0"],
                 id="hierarchy-weight-negative"),
    pytest.param(hierarchy("root/a/b", "1/a/3"), ["weights in volcano.sh/hierarchy-weights must be larger than 0"],
                 id="hierarchy-weight-not-a-number"),
    # HyperNodes
    pytest.param(hypernode(members=[exact("")]),
                 ["spec.members[0].selector.exactMatch.name", "should be at least 1 chars long"],
                 id="hypernode-empty-exact-name"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": ""})]),
                 ["spec.members[0].selector.regexMatch.pattern", "should be at least 1 chars long"],
                 id="hypernode-empty-pattern"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": "a(b"})]),
                 ["spec.members[0].selector.regexMatch.pattern", "member regexMatch pattern is invalid"],
                 id="hypernode-bad-pattern"),
    pytest.param(hypernode(members=[]), ["member must have at least one member"], id="hypernode-no-members"),
    pytest.param(hypernode(members=[exact("Node_with_invalid@characters")]),
                 ["spec.members[0].selector.exactMatch.name", "should match"], id="hypernode-exact-name-not-dns"),
]


@pytest.mark.parametrize(("obj", "texts"), CREATE)
def test_create_denial_carries_volcanos_message(obj: dict[str, Any], texts: list[str]) -> None:
    review = admit(obj, CLUSTER)
    assert not review.allowed
    denial = "; ".join(review.errors)
    for text in texts:
        assert text in denial


def updated(edit: Callable[[dict[str, Any]], Any], old: dict[str, Any] | None = None) -> tuple[dict, dict]:
    before = old if old is not None else job(tasks=None)
    after = copy.deepcopy(before)
    edit(after)
    return after, before


UPDATE = [
    pytest.param(*updated(spec(minAvailable=9)), ["not be greater than total replicas"], id="job-min-over-total"),
    pytest.param(*updated(lambda j: j["spec"]["tasks"].append(copy.deepcopy(j["spec"]["tasks"][0]) | {"name": "x"})),
                 ["job updates may not add or remove tasks"], id="job-adds-task"),
    pytest.param(*updated(spec(queue="other")),
                 ["job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` "
                  "and `PriorityClassName`"], id="job-changes-queue"),
    pytest.param(*updated(lambda q: q["spec"].update(weight=-1), queue("q", weight=1)),
                 ["spec.weight", "should be greater than or equal to 1"], id="queue-weight-negative"),
    pytest.param(*updated(lambda h: h["spec"].update(members=[]), hypernode()),
                 ["member must have at least one member"], id="hypernode-members-removed"),
]


@pytest.mark.parametrize(("obj", "old", "texts"), UPDATE)
def test_update_denial_carries_volcanos_message(obj: dict[str, Any], old: dict[str, Any], texts: list[str]) -> None:
    review = admit(obj, CLUSTER, old=old)
    assert not review.allowed
    denial = "; ".join(review.errors)
    for text in texts:
        assert text in denial
