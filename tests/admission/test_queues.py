"""Queue and PodGroup admission: the tree and quota rules, each bad input naming its field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.admission import AdmissionConfig, Cluster, admit, admit_delete
from central.admission.pods import validate_pod
from central.admission.queues import mutate_queue
from tests.builders import job, podgroup, queue


def tree(*queues: dict[str, Any], podgroups: tuple[dict[str, Any], ...] = ()) -> Cluster:
    return Cluster.from_objects([*queues, *podgroups])


CLUSTER = tree(
    queue(
        "eng", capability={"cpu": "10", "memory": "10Gi"}, deserved={"cpu": "8"}, guarantee={"resource": {"cpu": "4"}}
    ),
    queue("ml", parent="eng", capability={"cpu": "6"}, deserved={"cpu": "5"}, guarantee={"resource": {"cpu": "3"}}),
    queue("busy"),
    queue("closed", state="Closed"),
    queue("d1"),
    queue("d2", parent="d1"),
    queue("d3", parent="d2"),
    queue("d4", parent="d3"),
    podgroups=(podgroup("running", queue="busy"),),
)
CLUSTER.queues["holding"] = {**queue("holding"), "status": {"state": "Open", "allocated": {"cpu": "2", "pods": "2"}}}
CLUSTER.queues["a"] = {**queue("a"), "metadata": {"name": "a", "annotations": {
    "volcano.sh/hierarchy": "root/eng/ml", "volcano.sh/hierarchy-weights": "1/2/3"}}}


def annotated(path: str, weights: str) -> dict[str, Any]:
    return {**queue("q"), "metadata": {"name": "q", "annotations": {
        "volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}}}

BAD = [
    pytest.param(queue("q", weight=0), "spec.weight: should be greater than or equal to 1", id="weight-zero"),
    pytest.param(queue("q", weight=-3), "spec.weight: should be greater than or equal to 1", id="weight-negative"),
    pytest.param(queue("q", weight=70000), "spec.weight: should be less than or equal to 65535", id="weight-too-big"),
    pytest.param(
        queue("q", state="Closing"),
        'status.state: queue state must be in [Open, Closed], got "Closing"',
        id="state-closing",
    ),
    pytest.param(queue("q", state="Paused"), "status.state: queue state must be in [Open, Closed]", id="state-unknown"),
    pytest.param(
        queue("q", deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "3"}}),
        "spec.deserved.cpu: deserved[cpu]=2 must be >= guarantee[cpu]=3",
        id="guarantee-over-deserved",
    ),
    pytest.param(
        queue("q", capability={"cpu": "2"}, deserved={"cpu": "3"}),
        "spec.deserved.cpu: deserved[cpu]=3 must be <= capability[cpu]=2",
        id="deserved-over-capability",
    ),
    pytest.param(
        queue("q", capability={"memory": "1Gi"}, guarantee={"resource": {"memory": "2Gi"}}),
        "spec.guarantee.resource.memory: guarantee[memory]=2Gi must be <= capability[memory]=1Gi",
        id="guarantee-over-capability",
    ),
    pytest.param(queue("q", capability={"cpu": "lots"}), "spec.capability.cpu: invalid quantity", id="bad-quantity"),
    pytest.param(queue("q", deserved={"cpu": "-1"}), "spec.deserved.cpu: must not be negative", id="negative-quantity"),
    pytest.param(queue("q", parent="ghost"), 'spec.parent: parent queue "ghost" does not exist', id="missing-parent"),
    pytest.param(queue("q", parent="q"), "spec.parent: a queue cannot be its own parent", id="self-parent"),
    pytest.param(queue("d5", parent="d4"), None, id="depth-5-is-fine"),
    pytest.param(
        queue("q", parent="busy"),
        'spec.parent: parent queue "busy" already holds PodGroups',
        id="parent-holds-podgroups",
    ),
    pytest.param(
        queue("q", parent="ml", capability={"cpu": "7"}),
        'spec.capability.cpu: 7 must be <= ancestor queue "ml" spec.capability.cpu (6)',
        id="capability-over-parent",
    ),
    pytest.param(
        queue("q", parent="ml", capability={"cpu": "6", "memory": "20Gi"}),
        'spec.capability.memory: 20Gi must be <= ancestor queue "eng" spec.capability.memory (10Gi)',
        id="capability-over-grandparent",
    ),
    pytest.param(
        queue("q", parent="eng", deserved={"cpu": "4"}),
        'spec.deserved.cpu: the child queues of "eng" together have deserved 9',
        id="children-deserved-over-parent",
    ),
    pytest.param(
        queue("q", parent="eng", guarantee={"resource": {"cpu": "2"}}),
        'spec.guarantee.resource.cpu: the child queues of "eng" together have guarantee 5',
        id="children-guarantee-over-parent",
    ),
    pytest.param(
        queue("q", parent="eng", deserved={"memory": "4Gi"}), None, id="dimension-the-parent-leaves-unset-is-unlimited"
    ),
    pytest.param(queue("root", capability={"cpu": "1"}), "spec: the quotas", id="root-quotas-immutable"),
    pytest.param(queue("Bad_Name"), "metadata.name:", id="bad-name"),
    pytest.param(queue("q", reclaimable="yes"), "spec.reclaimable: must be true or false", id="reclaimable-not-bool"),
    pytest.param(
        queue("q", guarantee={"resource": {"cpu": "1"}}),
        "spec.deserved.cpu: deserved[cpu] must be >= guarantee[cpu]=1",
        id="guarantee-without-deserved",
    ),
    pytest.param(
        queue("q", parent="holding"),
        'spec.parent: queue "holding" cannot be the parent of "q": it has allocated pods (2)',
        id="parent-with-allocated-pods",
    ),
    pytest.param(
        annotated("root/sci", "1/2/3"),
        "metadata.annotations[volcano.sh/hierarchy]: volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights: \"root/sci\"",
        id="hierarchy-length-mismatch",
    ),
    pytest.param(
        annotated("root/sci", "1/x"),
        'metadata.annotations[volcano.sh/hierarchy-weights]: weights in volcano.sh/hierarchy-weights must be larger than 0: "x" in "1/x"',
        id="hierarchy-weight-not-a-number",
    ),
    pytest.param(
        annotated("root/sci", "1/0"),
        'metadata.annotations[volcano.sh/hierarchy-weights]: weights in volcano.sh/hierarchy-weights must be larger than 0: "0" in "1/0"',
        id="hierarchy-weight-zero",
    ),
    pytest.param(
        annotated("root/eng", "1/2"),
        'metadata.annotations[volcano.sh/hierarchy]: "root/eng" may not be a path above "root/eng/ml" of queue "a"',
        id="hierarchy-above-another-queue",
    ),
    pytest.param(annotated("root/eng/ml/x", "1/2/3/4"), None, id="hierarchy-below-another-is-fine"),
]


@pytest.mark.parametrize("obj, expected", BAD)
def test_queue_rules(obj: dict[str, Any], expected: str | None) -> None:
    review = admit(obj, CLUSTER)
    if expected is None:
        assert review.allowed, review.errors
    else:
        assert not review.allowed
        assert any(e.startswith(expected) for e in review.errors), review.errors


def test_depth_over_the_limit() -> None:
    deep = tree(*[queue(f"d{i}", parent=f"d{i - 1}" if i > 1 else None) for i in range(1, 6)])
    assert admit(queue("d6", parent="d5"), deep).errors == [
        "spec.parent: queue depth 6 exceeds the maximum allowed depth 5"
    ]


def test_cycle_in_existing_tree_is_reported() -> None:
    looped = tree(queue("a", parent="b"), queue("b", parent="a"))
    errors = admit(queue("c", parent="a"), looped).errors
    assert any(e.startswith("spec.parent: the queue hierarchy has a cycle") for e in errors), errors


def test_a_dangling_ancestor_ends_the_chain_without_a_crash() -> None:
    """The parent exists but its own parent was deleted (or not seen yet): judged on what is known
    (found by the webhook fuzz test: a KeyError)."""
    dangling = tree(queue("b", parent="gone"))
    assert admit(queue("a", parent="b"), dangling).errors == []


def test_update_that_shrinks_a_parent_below_its_children_is_refused() -> None:
    shrunk = queue("eng", capability={"cpu": "5"}, deserved={"cpu": "4"}, guarantee={"resource": {"cpu": "2"}})
    errors = admit(shrunk, CLUSTER, old=CLUSTER.queues["eng"]).errors
    assert any(
        e == 'spec.capability.cpu: 5 is less than the capability of descendant queue "ml" (6)' for e in errors
    ), errors
    assert any(e.startswith('spec.deserved.cpu: the child queues of "eng" together have deserved 5') for e in errors), (
        errors
    )
    assert any(
        e.startswith('spec.guarantee.resource.cpu: the child queues of "eng" together have guarantee 3') for e in errors
    )


def test_mutate_defaults() -> None:
    assert mutate_queue(queue("q"))["spec"] == {"weight": 1, "reclaimable": True, "parent": "root"}
    assert "parent" not in mutate_queue(queue("root"))["spec"]
    assert mutate_queue(queue("q", weight=5, reclaimable=False))["spec"]["weight"] == 5


@pytest.mark.parametrize(
    "name, expected",
    [
        pytest.param("root", "metadata.name: `root` queue can not be deleted", id="root"),
        pytest.param("default", "metadata.name: `default` queue can not be deleted", id="default"),
        pytest.param("eng", "metadata.name: queue eng can not be deleted because it has 1 child queues: ml", id="parent"),
        pytest.param("busy", None, id="with-podgroups"),  # Volcano lets it go; its PodGroups wait
        pytest.param("closed", None, id="empty-leaf"),
    ],
)
def test_queue_delete(name: str, expected: str | None) -> None:
    review = admit_delete(queue(name), CLUSTER)
    assert (expected in review.errors) if expected else review.errors == []


def test_queue_with_allocated_pods_is_kept_only_when_the_check_is_on() -> None:
    busy = queue("running")
    busy["status"] = {"allocated": {"pods": "2", "cpu": "2"}}
    cluster = Cluster.from_objects([busy])
    assert admit_delete(busy, cluster).allowed
    review = admit_delete(busy, cluster, AdmissionConfig(queue_allocated_pods_check=True))
    assert review.errors == ["metadata.name: queue running cannot be deleted because it has allocated Pods: 2"]


PODGROUPS = [
    pytest.param(podgroup(queue="ghost"), 'spec.queue: unable to find queue "ghost"', id="unknown-queue"),
    pytest.param(
        podgroup(queue="closed"), "spec.queue: can only submit PodGroup to queue with state Open", id="closed-queue"
    ),
    pytest.param(podgroup(minMember=-1), "spec.minMember: should be greater than or equal to 0", id="negative-min-member"),
    pytest.param(
        podgroup(minTaskMember={"ps": "one"}), "spec.minTaskMember.ps: must be an integer", id="bad-min-task-member"
    ),
    pytest.param(
        podgroup(minResources={"cpu": "1x"}), "spec.minResources.cpu: invalid quantity", id="bad-min-resources"
    ),
    pytest.param(
        podgroup(networkTopology={"highestTierAllowed": 2, "highestTierName": "spine"}),
        "spec.networkTopology: must not specify",
        id="both-tiers",
    ),
    pytest.param(
        podgroup(subGroupPolicy=[{"name": "a", "networkTopology": {"highestTierAllowed": 1, "highestTierName": "rack"}}]),
        "spec.subGroupPolicy[0].networkTopology: must not specify",
        id="subgroup-both-tiers",
    ),
    pytest.param(podgroup(subGroupPolicy=[{"networkTopology": {}}]), "spec.subGroupPolicy[0].name: is required",
                 id="subgroup-without-name"),
    pytest.param(podgroup(networkTopology={"mode": "strict"}), 'spec.networkTopology.mode: must be hard or soft',
                 id="bad-topology-mode"),
    pytest.param(podgroup(queue="busy"), None, id="valid"),
]


@pytest.mark.parametrize("obj, expected", PODGROUPS)
def test_podgroup_rules(obj: dict[str, Any], expected: str | None) -> None:
    review = admit(obj, CLUSTER)
    if expected is None:
        assert review.allowed, review.errors
    else:
        assert any(e.startswith(expected) for e in review.errors), review.errors


def test_podgroup_in_default_queue_takes_the_namespace_queue() -> None:
    namespace = {
        "kind": "Namespace",
        "metadata": {"name": "ml", "annotations": {"scheduling.volcano.sh/queue-name": "busy"}},
    }
    cluster = Cluster.from_objects([queue("busy"), namespace])
    assert admit(podgroup(queue="default"), cluster).object["spec"]["queue"] == "busy"
    assert admit(podgroup(queue="other"), cluster).object["spec"]["queue"] == "other"


@pytest.mark.parametrize(
    "annotations, expected",
    [
        pytest.param({"volcano.sh/jdb-min-available": "2"}, [], id="count"),
        pytest.param({"volcano.sh/jdb-max-unavailable": "30%"}, [], id="percent"),
        pytest.param(
            {"volcano.sh/jdb-min-available": "0"},
            ["metadata.annotations[volcano.sh/jdb-min-available]: jdb-min-available must be a positive integer or a valid percentage which between 1% ~ 99%"],
            id="zero",
        ),
        pytest.param(
            {"volcano.sh/jdb-max-unavailable": "100%"},
            ["metadata.annotations[volcano.sh/jdb-max-unavailable]: jdb-max-unavailable must be a positive integer or a valid percentage which between 1% ~ 99%"],
            id="100-percent",
        ),
        pytest.param(
            {"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"},
            ["metadata.annotations: not allow configure multiple annotations at same time"],
            id="both",
        ),
    ],
)
def test_pod_disruption_budget_annotations(annotations: dict[str, str], expected: list[str]) -> None:
    pod = {"kind": "Pod", "metadata": {"name": "p", "annotations": annotations}, "spec": {"schedulerName": "volcano"}}
    errors = validate_pod(pod)
    assert len(errors) == len(expected) and all(e.startswith(x) for e, x in zip(errors, expected, strict=True)), errors
    # Pods of other schedulers are not ours to judge, their JDB annotations included (Volcano).
    assert validate_pod({**pod, "spec": {"schedulerName": "default-scheduler"}}) == []
    assert validate_pod({**pod, "spec": {}}) == []


def test_cluster_does_not_write_to_the_callers_dict() -> None:
    mine: dict[str, Any] = {"a": queue("a")}
    cluster = Cluster(queues=mine)
    assert set(cluster.queues) == {"a", "root", "default"} and set(mine) == {"a"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


@settings(deadline=None, max_examples=100)
@given(
    st.dictionaries(
        st.sampled_from(["weight", "capability", "deserved", "guarantee", "parent", "reclaimable", "priority"]),
        json_values,
    ),
    st.sampled_from(["PodGroup", "Queue"]),
)
def test_queue_and_podgroup_admission_never_crash_on_junk(spec: dict[str, Any], kind: str) -> None:
    obj = queue("q", **spec) if kind == "Queue" else podgroup(**spec)
    review = admit(obj, CLUSTER)
    assert all(isinstance(e, str) and ": " in e for e in review.errors)


@settings(deadline=None, max_examples=100)
@given(
    st.lists(st.fixed_dictionaries({"metadata": json_values, "spec": json_values, "status": json_values}), max_size=4)
)
def test_junk_existing_objects_never_crash_admission(existing: list[dict[str, Any]]) -> None:
    objects = [{"kind": kind, **obj} for obj in existing for kind in ("Queue", "PodGroup", "Namespace")]
    cluster = Cluster.from_objects(objects)
    for obj in (queue("q", parent="x"), podgroup(), job(queue="x")):
        admit(obj, cluster)


def test_where_a_queue_sits_is_judged_when_it_is_placed_not_on_every_update() -> None:
    """The garbage collector removes a foreground-deletion finalizer with an update: refusing it
    because the parent has allocated pods since would leave the queue undeletable (Volcano's
    e2e Capacity Reclaim Case 12 cleanup). Moving a queue under such a parent is still refused."""
    placed = tree(queue("holding"), queue("q", parent="holding"))
    placed.queues["holding"] = {**queue("holding"), "status": {"state": "Open", "allocated": {"cpu": "2", "pods": "2"}}}
    old = placed.queues["q"]
    finalizing = {**old, "metadata": {**old["metadata"], "finalizers": []}}
    assert admit(finalizing, placed, old=old).errors == []
    moved = admit(queue("q2", parent="holding"), placed, old=queue("q2")).errors
    assert moved == []  # "holding" has a child already: Volcano's rule allows it
    alone = tree(queue("holding"), queue("q"))
    alone.queues["holding"] = placed.queues["holding"]
    assert admit(queue("q", parent="holding"), alone, old=alone.queues["q"]).errors == [
        'spec.parent: queue "holding" cannot be the parent of "q": it has allocated pods (2)']
