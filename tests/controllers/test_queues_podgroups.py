"""Queue controller (states, cascade, counts) and PodGroup controller (groups for plain pods)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.controllers.bus import command
from central.controllers.podgroups import podgroup_for_pod, podgroup_of_idle_owner
from central.controllers.queues import CLOSED_BY_PARENT, reconcile_queue
from tests.builders import pod, podgroup, queue


class Queues:
    """Queues applied in memory, with the PodGroups and Commands around them."""

    def __init__(self, *queues: dict[str, Any]):
        self.queues = {q["metadata"]["name"]: q for q in [queue("root"), *queues]}
        self.podgroups: list[dict[str, Any]] = []
        self.commands: list[dict[str, Any]] = []

    def state(self, name: str) -> str:
        return str(self.queues[name].get("status", {}).get("state", "Open"))

    def marked(self, name: str) -> bool:
        return self.queues[name]["metadata"].get("annotations", {}).get(CLOSED_BY_PARENT) == "true"

    def operate(self, name: str, action: str) -> None:
        self.commands.append(command(action, "Queue", name))
        self.reconcile(name)

    def reconcile(self, name: str) -> None:
        d = reconcile_queue(copy.deepcopy(self.queues[name]), copy.deepcopy(self.queues), self.podgroups, self.commands)
        self.commands = [c for c in self.commands if c["metadata"]["name"] not in d.delete_commands]
        self.queues[name]["status"] = d.status
        self.queues[name]["spec"].update(d.spec_patch)
        self._annotate(name, d.annotations)
        for change in d.cascade:
            self.queues[change.name].setdefault("status", {})["state"] = change.state
            self._annotate(change.name, change.annotations)

    def _annotate(self, name: str, edits: dict[str, str | None]) -> None:
        annotations = self.queues[name]["metadata"].setdefault("annotations", {})
        for key, value in edits.items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value


def running_pg(q: str, phase: str = "Running") -> dict[str, Any]:
    pg = podgroup(f"pg-{q}-{phase}", queue=q)
    pg["status"] = {"phase": phase}
    return pg


def test_close_an_empty_queue() -> None:
    qs = Queues(queue("a"))
    qs.operate("a", "CloseQueue")
    assert qs.state("a") == "Closed" and qs.commands == []
    qs.operate("a", "OpenQueue")
    assert qs.state("a") == "Open"


def test_close_waits_for_podgroups_to_drain() -> None:
    qs = Queues(queue("a"))
    qs.podgroups = [running_pg("a"), running_pg("a", "Completed")]
    qs.operate("a", "CloseQueue")
    assert qs.state("a") == "Closing"
    qs.reconcile("a")
    assert qs.state("a") == "Closing"
    qs.podgroups = [running_pg("a", "Completed")]
    qs.reconcile("a")
    assert qs.state("a") == "Closed"


def test_close_cascades_to_descendants_and_reopen_restores_them() -> None:
    qs = Queues(
        queue("eng"), queue("ml", parent="eng"), queue("cv", parent="ml"), queue("web", parent="eng"), queue("other")
    )
    qs.podgroups = [running_pg("web")]
    qs.operate("eng", "CloseQueue")
    assert {n: qs.state(n) for n in ("eng", "ml", "cv", "web", "other")} == {
        "eng": "Closed",
        "ml": "Closed",
        "cv": "Closed",
        "web": "Closing",
        "other": "Open",
    }
    assert qs.marked("ml") and qs.marked("cv") and qs.marked("web") and not qs.marked("eng")
    qs.operate("eng", "OpenQueue")
    assert all(qs.state(n) == "Open" and not qs.marked(n) for n in ("eng", "ml", "cv", "web"))


def test_a_queue_closed_on_its_own_stays_closed_when_the_parent_reopens() -> None:
    qs = Queues(queue("eng"), queue("ml", parent="eng"), queue("web", parent="eng"))
    qs.operate("ml", "CloseQueue")
    qs.operate("eng", "CloseQueue")
    qs.operate("eng", "OpenQueue")
    assert (qs.state("ml"), qs.state("web")) == ("Closed", "Open")


def test_a_child_checks_its_parent_when_the_cascade_was_interrupted() -> None:
    qs = Queues(queue("eng", state="Closed"), queue("ml", parent="eng"))
    qs.reconcile("ml")
    assert qs.state("ml") == "Closed" and qs.marked("ml")


def test_counts_and_parent_default() -> None:
    qs = Queues(queue("a"))
    qs.podgroups = [running_pg("a"), running_pg("a", "Inqueue"), running_pg("a", "Pending"), running_pg("b")]
    d = reconcile_queue(qs.queues["a"], qs.queues, qs.podgroups)
    assert {k: d.status[k] for k in ("running", "inqueue", "pending", "completed", "unknown")} == {
        "running": 1,
        "inqueue": 1,
        "pending": 1,
        "completed": 0,
        "unknown": 0,
    }
    assert d.spec_patch == {"parent": "root"} and d.status_changed
    qs.queues["a"]["status"] = d.status
    assert not reconcile_queue(qs.queues["a"], qs.queues, qs.podgroups).status_changed


# A web pod of queue `team` asking half a CPU and 1Gi, with one annotation its PodGroup copies
# and one it must not.
WEB_POD: dict[str, Any] = {
    "uid": "pod-uid",
    "annotations": {
        "scheduling.volcano.sh/queue-name": "team",
        "volcano.sh/preemptable": "true",
        "unrelated": "x",
    },
    "requests": {"cpu": "500m", "memory": "1Gi"},
    "priorityClassName": "high",
}


def test_podgroup_for_a_replicaset_pod() -> None:
    owner_ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid", "controller": True}
    owner = {"metadata": {"name": "web", "annotations": {"scheduling.volcano.sh/group-min-member": "3"}}}
    d = podgroup_for_pod(pod("web-1", "shop", owners=[owner_ref], **WEB_POD), owner)
    assert d is not None
    assert d.pod_annotations == {"scheduling.k8s.io/group-name": "podgroup-rs-uid"}
    pg = d.podgroup
    assert pg["metadata"]["name"] == "podgroup-rs-uid" and pg["metadata"]["namespace"] == "shop"
    assert pg["metadata"]["ownerReferences"] == [owner_ref]
    assert pg["spec"] == {
        "minMember": 3,
        "queue": "team",
        "minResources": {"cpu": "1500m", "memory": "3Gi"},
        "priorityClassName": "high",
    }
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "true"}


def test_podgroup_for_a_bare_pod() -> None:
    d = podgroup_for_pod(pod("web-1", "shop", **WEB_POD))
    assert d is not None and d.podgroup["metadata"]["name"] == "podgroup-pod-uid"
    assert d.podgroup["spec"]["minMember"] == 1 and d.podgroup["metadata"]["ownerReferences"][0]["kind"] == "Pod"


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda p: p["spec"].update(schedulerName="default-scheduler"), id="other-scheduler"),
        pytest.param(
            lambda p: p["metadata"]["annotations"].update({"scheduling.k8s.io/group-name": "g"}), id="already-grouped"
        ),
    ],
)
def test_pods_left_alone(edit: Any) -> None:
    p = pod("web-1", "shop", **WEB_POD)
    edit(p)
    assert podgroup_for_pod(p) is None


@settings(deadline=None, max_examples=100)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=7),
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["OpenQueue", "CloseQueue"])), max_size=8),
    st.sets(st.integers(0, 7), max_size=3),
)
def test_cascade_invariants(parents: list[int], operations: list[tuple[int, str]], busy: set[int]) -> None:
    """Whatever is opened and closed: below a closed queue nothing is Open, and a queue marked
    closed-by-parent has a parent that is not Open."""
    names = [f"q{i}" for i in range(len(parents))]
    # each queue's parent is an earlier queue (or root), so the tree has no cycle
    qs = Queues(
        *[queue(n, parent=names[p] if p < i else None) for i, (n, p) in enumerate(zip(names, parents, strict=True))]
    )
    qs.podgroups = [running_pg(names[i]) for i in busy if i < len(names)]
    for index, action in operations:
        if index < len(names):
            qs.operate(names[index], action)
    for _ in range(len(names) + 1):  # the loop reconciles every queue until nothing changes
        for name in names:
            qs.reconcile(name)
    for name in names:
        parent = qs.queues[name]["spec"]["parent"]
        if qs.state(parent) != "Open":
            assert qs.state(name) != "Open", (name, parent)
        if qs.marked(name):
            assert qs.state(parent) != "Open"


@pytest.mark.parametrize(("owner", "expected"), [
    pytest.param({"kind": "ReplicaSet", "metadata": {"uid": "u1"}, "spec": {"replicas": 0}}, "podgroup-u1", id="rs-zero"),
    pytest.param({"kind": "StatefulSet", "metadata": {"uid": "u2"}, "spec": {"replicas": 0}}, "podgroup-u2", id="sts-zero"),
    pytest.param({"kind": "ReplicaSet", "metadata": {"uid": "u1"}, "spec": {"replicas": 2}}, None, id="rs-running"),
    pytest.param({"kind": "ReplicaSet", "metadata": {"uid": "u1"}, "spec": {}}, None, id="rs-unset-is-one"),
    pytest.param({"kind": "Deployment", "metadata": {"uid": "u3"}, "spec": {"replicas": 0}}, None, id="deployment"),
])
def test_a_workload_scaled_to_zero_loses_its_podgroup(owner: dict, expected: str | None) -> None:
    """As Volcano's PodGroup controller: a Deployment's old ReplicaSet at 0 replicas has no PodGroup left."""
    assert podgroup_of_idle_owner(owner) == expected
