"""The controllers' side of network topology: status.nodeCount of HyperNodes (the nodes each
holds through its members' members, on the scheduler's own tree; a HyperNode left out of the
tree counts its own nodes), and a plain pod's PodGroup taking its network-topology annotations."""

from __future__ import annotations

import pytest

from central.controllers.hypernodes import node_counts
from central.controllers.podgroups import podgroup_for_pod
from tests.builders import exact, hypernode, member, node, pod


def test_counts_through_members_of_members():
    rack_b = {"rack": "b"}
    nodes = [node("a-1"), node("a-2"), node("b-1", labels=rack_b), node("b-2", labels=rack_b), node("spare")]
    hypernodes = [hypernode("leaf-a", 1, [member(regexMatch={"pattern": "^a-"})]),
                  hypernode("leaf-b", 1, [member(labelMatch={"matchLabels": {"rack": "b"}})]),
                  hypernode("spine", 2, [exact("leaf-a", "HyperNode"),
                            exact("leaf-b", "HyperNode"), exact("spare")]),
                  hypernode("ghost", 1, [exact("no-such-node")])]
    assert node_counts(hypernodes, nodes) == {"leaf-a": 2, "leaf-b": 2, "spine": 5, "ghost": 0}


def test_a_hypernode_left_out_of_the_tree_counts_its_own_nodes_and_an_unreadable_one_none():
    nodes = [node("n1"), node("n2")]
    hypernodes = [hypernode("leaf", 1, [exact("n1")]),
                  hypernode("spine-a", 2, [exact("leaf", "HyperNode")]),
                  hypernode("spine-b", 2, [exact("leaf", "HyperNode"), exact("n2")]),
                  hypernode("broken", 1, [member(regexMatch={"pattern": "n(["})])]
    assert node_counts(hypernodes, nodes) == {"leaf": 1, "spine-a": 1, "spine-b": 1}


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
    decision = podgroup_for_pod(pod("web-0", "shop", uid="pod-uid", annotations=annotations, cpu=None))
    assert decision is not None
    assert decision.podgroup["spec"].get("networkTopology") == expected
