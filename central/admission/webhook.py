"""AdmissionReview (admission.k8s.io/v1) in, AdmissionReview out: the webhook's logic, no HTTP.

    respond(review, cluster, config=DEFAULT_CONFIG, mutating=False) -> dict

The HTTPS server (central/kube) decodes the request body, calls this with the cluster as its
informers see it, and writes the result back. A mutating call always allows and carries the
defaults as a base64 JSONPatch (Volcano's mutating webhooks never refuse); a validating call
applies the same defaults, then refuses with every problem in `status.message`, one per line.
DELETE only has rules for Queues. A request this code cannot read is refused with code 400,
so a broken request never slips through (the webhook's failurePolicy is Fail).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from central.admission.cluster import Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.review import admit, admit_delete, json_patch


def respond(
    review: Mapping[str, Any], cluster: Cluster, config: AdmissionConfig = DEFAULT_CONFIG, mutating: bool = False
) -> dict[str, Any]:
    request = review.get("request") if isinstance(review.get("request"), Mapping) else {}
    response: dict[str, Any] = {"uid": request.get("uid", "")}
    operation = request.get("operation")
    obj = request.get("oldObject") if operation == "DELETE" else request.get("object")
    if not isinstance(obj, Mapping):
        response.update(
            allowed=False,
            status={"code": 400, "reason": "BadRequest", "message": f"{operation or 'request'} without an object"},
        )
        return _wrap(review, response)
    obj = _with_namespace(obj, request.get("namespace"))
    if operation == "DELETE":
        result = admit_delete(obj, cluster)
    else:
        old = (
            request.get("oldObject")
            if operation == "UPDATE" and isinstance(request.get("oldObject"), Mapping)
            else None
        )
        result = admit(obj, cluster, config, old)
    if mutating:
        response["allowed"] = True
        patch = [] if operation == "DELETE" else json_patch(obj, result.object)
        if patch:
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
    else:
        response["allowed"] = result.allowed
        if not result.allowed:
            response["status"] = {"code": 422, "reason": "Invalid", "message": "\n".join(result.errors)}
    return _wrap(review, response)


def _with_namespace(obj: Mapping[str, Any], namespace: Any) -> dict[str, Any]:
    """The object with the request's namespace filled in (a create request may leave it out)."""
    out = dict(obj)
    meta = out.get("metadata")
    if namespace and isinstance(meta, Mapping) and not meta.get("namespace"):
        out["metadata"] = {**meta, "namespace": namespace}
    return out


def _wrap(review: Mapping[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": str(review.get("apiVersion") or "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }
