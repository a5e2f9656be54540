"""The controllers' side of network topology: status.nodeCount of HyperNodes (the nodes each
holds through its members' members, on the scheduler's own tree; a HyperNode left out of the
tree counts its own nodes), and a plain pod's PodGroup taking its network-topology annotations."""

from __future__ import annotations

from typing import Any

import pytest

from central.controllers.hypernodes import node_counts
from central.controllers.podgroups import podgroup_for_pod


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def hypernode(name: str, tier: int, *members: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": list(members)}}


def select(kind: str = "Node", **selector: Any) -> dict[str, Any]:
    return {"type": kind, "selector": selector}


def test_counts_through_members_of_members():
    nodes = [node("a-1"), node("a-2"), node("b-1", rack="b"), node("b-2", rack="b"), node("spare")]
    hypernodes = [hypernode("leaf-a", 1, select(regexMatch={"pattern": "^a-"})),
                  hypernode("leaf-b", 1, select(labelMatch={"matchLabels": {"rack": "b"}})),
                  hypernode("spine", 2, select("HyperNode", exactMatch={"name": "leaf-a"}),
                            select("HyperNode", exactMatch={"name": "leaf-b"}), select(exactMatch={"name": "spare"})),
                  hypernode("ghost", 1, select(exactMatch={"name": "no-such-node"}))]
    assert node_counts(hypernodes, nodes) == {"leaf-a": 2, "leaf-b": 2, "spine": 5, "ghost": 0}


def test_a_hypernode_left_out_of_the_tree_counts_its_own_nodes_and_an_unreadable_one_none():
    nodes = [node("n1"), node("n2")]
    hypernodes = [hypernode("leaf", 1, select(exactMatch={"name": "n1"})),
                  hypernode("spine-a", 2, select("HyperNode", exactMatch={"name": "leaf"})),
                  hypernode("spine-b", 2, select("HyperNode", exactMatch={"name": "leaf"}), select(exactMatch={"name": "n2"})),
                  hypernode("broken", 1, select(regexMatch={"pattern": "n(["}))]
    assert node_counts(hypernodes, nodes) == {"leaf": 1, "spine-a": 1, "spine-b": 1}


def _pod(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": "web-0", "namespace": "shop", "uid": "pod-uid", "annotations": annotations},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "nginx"}]}}


@pytest.mark.parametrize("annotations, expected", [
    pytest.param({"volcano.sh/network-topology-mode": "soft", "volcano.sh/network-topology-highest-tier": "2"},
                 {"mode": "soft", "highestTierAllowed": 2}, id="both"),
    pytest.param({"volcano.sh/network-topology-mode": "soft"}, {"mode": "soft"}, id="soft-only"),
    pytest.param({"volcano.sh/network-topology-highest-tier": "1"}, {"mode": "hard", "highestTierAllowed": 1}, id="tier"),
    pytest.param({"volcano.sh/network-topology-mode": "Strict", "volcano.sh/network-topology-highest-tier": "x"},
                 {"mode": "hard"}, id="unreadable-as-volcano"),
    pytest.param({}, None, id="none"),
])
def test_a_plain_pods_podgroup_takes_the_network_topology_annotations(annotations, expected):
    """Volcano's TestBuildPodGroupFromPodWithNetworkTopology (pg_controller_test.go)."""
    decision = podgroup_for_pod(_pod(**annotations))
    assert decision is not None
    assert decision.podgroup["spec"].get("networkTopology") == expected
