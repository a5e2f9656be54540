"""The webhook's AdmissionReview handling: patches from the defaults, refusals with every problem."""

from __future__ import annotations

import base64
import json
from typing import Any

from central.admission import Cluster
from central.admission.webhook import respond
from tests.admission.helpers import job, queue


def review(operation: str, obj: Any, old: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "r-1", "operation": operation, "namespace": "ml", "object": obj, "oldObject": old},
    }


def test_mutating_returns_the_defaults_as_a_json_patch() -> None:
    out = respond(review("CREATE", job(queue="")), Cluster(), mutating=True)
    response = out["response"]
    assert out["kind"] == "AdmissionReview" and response["uid"] == "r-1" and response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"]))
    spec = next(op for op in patch if op["path"] == "/spec")["value"]
    assert (spec["queue"], spec["maxRetry"], spec["minAvailable"]) == ("default", 3, 3)


def test_validating_refuses_with_every_problem() -> None:
    bad = job(queue="ghost", minAvailable=9)
    response = respond(review("CREATE", bad), Cluster())["response"]
    assert response["allowed"] is False and response["status"]["code"] == 422
    assert response["status"]["message"].splitlines() == [
        "spec.minAvailable: 9 must be <= the total replicas of all tasks (3)",
        'spec.queue: unable to find job queue "ghost"',
    ]


def test_update_and_delete() -> None:
    old = job()
    new = job(queue="other")
    assert respond(review("UPDATE", new, old), Cluster())["response"]["status"]["message"].startswith(
        "spec.queue: may not change"
    )
    deleted = respond(review("DELETE", None, queue("default")), Cluster())["response"]
    assert deleted["allowed"] is False and 'queue "default" can not be deleted' in deleted["status"]["message"]


def test_a_request_without_an_object_is_refused() -> None:
    response = respond({"request": {"uid": "x", "operation": "CREATE"}}, Cluster())["response"]
    assert response["allowed"] is False and response["status"]["code"] == 400
