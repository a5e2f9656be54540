"""The agents' pod reads, decided per request: an authorization webhook.

RBAC cannot require a field selector, so a `pods list` grant lists every pod of the cluster.
The API server's structured authorization configuration (`--authorization-config`) sends this
webhook only the node agent's pod list and watch requests (its `matchConditions`), as a
SubjectAccessReview. One is allowed when its field selector requires `spec.nodeName` to be the
node the agent's token is bound to: the API server puts that node in the token's user extra
(`authentication.kubernetes.io/node-name`) and parses the request's selector into
`resourceAttributes.fieldSelector.requirements` (each `=`, `==` or `in` as operator `In`).
Requirements are ANDed, so one that pins the node is enough. Anything else is denied, so even
an RBAC grant left behind cannot widen it; a request this webhook was not meant for gets no
opinion, and the next authorizer (RBAC) decides.
"""

from __future__ import annotations

from typing import Any

NODE_NAME_CLAIM = "authentication.kubernetes.io/node-name"
AGENT_USER = "system:serviceaccount:caldera-system:caldera-nodeagent"
READS = ("list", "watch")


def review_access(review: dict[str, Any], agent_user: str = AGENT_USER) -> dict[str, Any]:
    """The SubjectAccessReview `review` with its status filled in."""
    spec = review.get("spec") or {}
    attrs = spec.get("resourceAttributes") or {}
    out = {"apiVersion": review.get("apiVersion") or "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}
    if (spec.get("user") != agent_user or attrs.get("group") or attrs.get("resource") != "pods"
            or attrs.get("subresource") or attrs.get("verb") not in READS):
        return dict(out, status={"allowed": False, "reason": "not an agent's pod read"})
    nodes = ((spec.get("extra") or {}).get(NODE_NAME_CLAIM)) or []
    if len(nodes) != 1 or not nodes[0]:
        return dict(out, status={"allowed": False, "denied": True,
                                 "reason": "the agent's token is bound to no node"})
    node = nodes[0]
    if node_pinned(attrs.get("fieldSelector") or {}) == node:
        return dict(out, status={"allowed": True, "reason": f"pods on its own node {node}"})
    return dict(out, status={"allowed": False, "denied": True,
                             "reason": f"an agent lists only its node's pods: fieldSelector spec.nodeName={node}"})


def node_pinned(selector: dict[str, Any]) -> str | None:
    """The one node a field selector's requirements confine `spec.nodeName` to, if any."""
    for req in selector.get("requirements") or []:
        if req.get("key") == "spec.nodeName" and req.get("operator") == "In" and len(req.get("values") or []) == 1:
            return str(req["values"][0])
    return None
