"""The webhook half of queue admission by scheduling gate: feature gates as Kubernetes parses
them, and the queue-allocation gate given to the pods that opt in."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from central.admission import DEFAULT_CONFIG, AdmissionConfig, Cluster, admit
from central.admission.pods import mutate_pod
from central.admission.webhook import review
from central.errors import InputError
from central.model.schedulinggate import QUEUE_ALLOCATION_GATE, SCHEDULING_GATES_QUEUE_ADMISSION, parse_feature_gates
from tests.builders import pod

ON = AdmissionConfig(features=parse_feature_gates("SchedulingGatesQueueAdmission=true"))


def opted_in_pod(**spec: Any) -> dict[str, Any]:
    obj = pod("p", annotations={QUEUE_ALLOCATION_GATE: "true"})
    obj["spec"].update(spec)
    return obj


def gates(obj: dict[str, Any]) -> list[str]:
    return [g["name"] for g in obj["spec"].get("schedulingGates") or []]


def test_feature_gates_parse_as_kubernetes_does():
    assert SCHEDULING_GATES_QUEUE_ADMISSION not in parse_feature_gates("")  # off by default, as Volcano
    assert SCHEDULING_GATES_QUEUE_ADMISSION in parse_feature_gates("SchedulingGatesQueueAdmission=true")
    assert SCHEDULING_GATES_QUEUE_ADMISSION in parse_feature_gates(" PriorityClass=false, SchedulingGatesQueueAdmission=1 ")
    assert "PriorityClass" not in parse_feature_gates("PriorityClass=false")
    assert SCHEDULING_GATES_QUEUE_ADMISSION not in parse_feature_gates(
        "SchedulingGatesQueueAdmission=true,SchedulingGatesQueueAdmission=false")  # the last one counts


@pytest.mark.parametrize("text, message", [
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("SchedulingGatesQueueAdmission", "missing bool value for SchedulingGatesQueueAdmission"),
    ("SchedulingGatesQueueAdmission=yes", "invalid value of SchedulingGatesQueueAdmission=yes"),
])
def test_a_bad_feature_gate_is_refused_with_the_flag(text, message):
    with pytest.raises(InputError) as err:
        parse_feature_gates(text)
    assert err.value.where == "--feature-gates" and message in err.value.message


def test_an_opted_in_pod_gets_the_queue_gate_after_its_own():
    assert gates(mutate_pod(opted_in_pod(), ON)) == [QUEUE_ALLOCATION_GATE]
    other = opted_in_pod(schedulingGates=[{"name": "example.com/other"}])
    assert gates(mutate_pod(other, ON)) == ["example.com/other", QUEUE_ALLOCATION_GATE]
    assert gates(other) == ["example.com/other"]  # the input is not changed


@pytest.mark.parametrize("obj, config", [
    pytest.param(opted_in_pod(), DEFAULT_CONFIG, id="feature-off"),
    pytest.param(pod("p"), ON, id="no-annotation"),
    pytest.param(pod("p", annotations={QUEUE_ALLOCATION_GATE: "True"}), ON, id="annotation-not-exactly-true"),
    pytest.param(opted_in_pod(schedulingGates=[{"name": QUEUE_ALLOCATION_GATE}]), ON, id="gate-already-there"),
])
def test_other_pods_are_left_as_they_are(obj, config):
    assert mutate_pod(obj, config) == obj


class _SyncedView:
    def synced(self) -> bool:
        return True

    def cluster(self, queue: Any = None) -> Cluster:
        return Cluster()


def _review(obj: dict[str, Any], config: AdmissionConfig, operation: str = "CREATE") -> dict[str, Any]:
    request = {"uid": "u-1", "operation": operation, "object": obj}
    return review("/pods/mutate", request, _SyncedView(), config)  # type: ignore[arg-type]


def test_the_pods_mutate_route_answers_the_gate_as_a_json_patch_for_any_scheduler():
    obj = opted_in_pod(schedulerName="default-scheduler")
    response = _review(obj, ON)
    assert response["allowed"] and response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    assert [op["path"] for op in patch] == ["/spec"]
    assert gates({"spec": patch[0]["value"]}) == [QUEUE_ALLOCATION_GATE]
    assert "patch" not in _review(obj, DEFAULT_CONFIG)  # feature off: allowed unchanged
    assert "patch" not in _review(obj, ON, operation="UPDATE")  # gates are only ever given at creation


def test_caldera_validate_shows_the_pod_as_the_webhook_leaves_it():
    assert gates(admit(opted_in_pod(), Cluster(), ON).object) == [QUEUE_ALLOCATION_GATE]
