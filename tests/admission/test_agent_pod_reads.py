"""The authorization webhook for the agents' pod reads: a list or watch is allowed only when its
field selector pins spec.nodeName to the node the agent's token is bound to."""

from __future__ import annotations

from typing import Any

import pytest

from central.admission.authorizer import AGENT_USER, NODE_NAME_CLAIM, review_access


def sar(verb: str = "list", requirements: list[dict[str, Any]] | None = None, node: str | None = "node-1",
        user: str = AGENT_USER, resource: str = "pods", subresource: str = "") -> dict[str, Any]:
    attrs: dict[str, Any] = {"verb": verb, "resource": resource, "version": "v1"}
    if subresource:
        attrs["subresource"] = subresource
    if requirements is not None:
        attrs["fieldSelector"] = {"requirements": requirements}
    spec: dict[str, Any] = {"user": user, "resourceAttributes": attrs}
    if node is not None:
        spec["extra"] = {NODE_NAME_CLAIM: [node]}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def on(node: str, op: str = "In") -> list[dict[str, Any]]:
    return [{"key": "spec.nodeName", "operator": op, "values": [node]}]


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_its_own_node_is_allowed(verb: str) -> None:
    status = review_access(sar(verb, on("node-1")))["status"]
    assert status["allowed"] is True and not status.get("denied")


def test_another_requirement_beside_the_node_still_narrows() -> None:
    reqs = [{"key": "status.phase", "operator": "NotIn", "values": ["Succeeded"]}, *on("node-1")]
    assert review_access(sar("watch", reqs))["status"]["allowed"] is True


@pytest.mark.parametrize("requirements", [
    None,  # no selector: every pod
    on("node-2"),  # another node
    on("node-1", "NotIn"),  # every node but its own
    [{"key": "spec.nodeName", "operator": "In", "values": ["node-1", "node-2"]}],
    [{"key": "metadata.namespace", "operator": "In", "values": ["node-1"]}],
])
def test_anything_wider_than_its_node_is_denied(requirements: list[dict[str, Any]] | None) -> None:
    status = review_access(sar("list", requirements))["status"]
    assert status["allowed"] is False and status["denied"] is True


def test_a_token_bound_to_no_node_is_denied() -> None:
    status = review_access(sar("list", on("node-1"), node=None))["status"]
    assert status["allowed"] is False and status["denied"] is True


@pytest.mark.parametrize("review", [
    sar("get", on("node-1")),
    sar("list", on("node-1"), user="system:serviceaccount:caldera-system:caldera-scheduler"),
    sar("list", on("node-1"), resource="secrets"),
    sar("create", on("node-1"), subresource="eviction"),
])
def test_requests_it_is_not_meant_for_get_no_opinion(review: dict[str, Any]) -> None:
    """Not denied: RBAC, next in the chain, decides them."""
    status = review_access(review)["status"]
    assert status["allowed"] is False and not status.get("denied")
