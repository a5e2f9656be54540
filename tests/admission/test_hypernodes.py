"""Admission of HyperNodes and of Jobs' networkTopology: one error naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from central.admission import Cluster, admit
from central.model.jobs import expand_job
from tests.builders import hypernode, job, member

CLUSTER = Cluster.from_objects([])


@pytest.mark.parametrize("obj, expected", [
    pytest.param(hypernode(), None, id="valid"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": "^rack1-[0-9]+$"}),
                                    member(labelMatch={"matchLabels": {"rack": "1"}}),
                                    member("HyperNode", exactMatch={"name": "leaf-a"})]), None, id="every-selector"),
    pytest.param(hypernode(members=[member(exactMatch={"name": "node-1"}), member(regexMatch={"pattern": "node-(["})]),
                 "spec.members[1].selector.regexMatch.pattern: member regexMatch pattern is invalid: 'node-(['", id="bad-regex"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": "^(rack)-\\1$"})]),
                 "spec.members[0].selector.regexMatch.pattern: member regexMatch pattern is invalid:", id="backreference-as-go"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": "^(?=rack)"})]),
                 "spec.members[0].selector.regexMatch.pattern: member regexMatch pattern is invalid:", id="lookahead-as-go"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": "a" * 1025})]),
                 "spec.members[0].selector.regexMatch.pattern: is 1025 characters long; at most 1024", id="pattern-too-long"),
    pytest.param(hypernode(members=[member(regexMatch={"pattern": "\\pL{1000}"})]),
                 "spec.members[0].selector.regexMatch.pattern: member regexMatch pattern is invalid: '\\\\pL{1000}' (RE2 syntax, as "
                 "Go's regexp): pattern too large", id="program-too-large"),
    pytest.param(hypernode(name="spine.fabric-1"), None, id="dotted-name"),
    pytest.param(hypernode(name="<cluster-top>"), "metadata.name: not a valid HyperNode name", id="bad-hypernode-name"),
    pytest.param(hypernode(name=""), "metadata.name: is required", id="no-name"),
    pytest.param(hypernode(tier=0), "spec.tier: must be >= 1, got 0", id="tier-zero"),
    pytest.param(hypernode(tier="2"), "spec.tier: expected an integer", id="tier-text"),
    pytest.param(hypernode(members=[]), "spec.members: member must have at least one member", id="no-members"),
    pytest.param(hypernode(members=[member("Switch", exactMatch={"name": "a"})]),
                 "spec.members[0].type: must be Node or HyperNode, got 'Switch'", id="bad-type"),
    pytest.param(hypernode(members=[member(exactMatch={"name": "a"}, regexMatch={"pattern": "b"})]),
                 "spec.members[0].selector: exactly one of exactMatch, regexMatch or labelMatch must be given, "
                 "got exactMatch and regexMatch", id="two-selectors"),
    pytest.param(hypernode(members=[member("HyperNode", labelMatch={"matchLabels": {"a": "b"}})]),
                 "spec.members[0].selector.labelMatch: a HyperNode member is named by exactMatch", id="labels-for-hypernode"),
    pytest.param(hypernode(members=[member("HyperNode", regexMatch={"pattern": "^leaf-"})]),
                 "spec.members[0].selector.regexMatch: a HyperNode member is named by exactMatch", id="regex-for-hypernode"),
    pytest.param(hypernode(members=[member(exactMatch={"name": "Node_1"})]),
                 "spec.members[0].selector.exactMatch.name: should match '", id="bad-name"),
])
def test_hypernode_rules(obj: dict[str, Any], expected: str | None) -> None:
    review = admit(obj, CLUSTER)
    if expected is None:
        assert review.allowed, review.errors
    else:
        assert not review.allowed
        assert len(review.errors) == 1 and review.errors[0].startswith(expected), review.errors


@pytest.mark.parametrize("topology, expected", [
    pytest.param({"mode": "hard", "highestTierAllowed": 1}, None, id="valid"),
    pytest.param({"mode": "soft"}, None, id="soft"),
    pytest.param({"mode": "strict"}, "spec.networkTopology.mode: must be hard or soft", id="bad-mode"),
    pytest.param({"mode": "hard", "highestTierAllowed": 0}, "spec.networkTopology.highestTierAllowed: should be greater than or equal to 1",
                 id="tier-zero"),
])
def test_job_network_topology(topology: dict[str, Any], expected: str | None) -> None:
    review = admit(job(networkTopology=topology), Cluster.from_objects([]))
    if expected is None:
        assert review.allowed, review.errors
    else:
        assert any(e.startswith(expected) for e in review.errors), review.errors


def test_the_job_controller_carries_network_topology_to_the_podgroup() -> None:
    podgroup, _ = expand_job(job(networkTopology={"highestTierName": "rack"}))
    assert podgroup["spec"]["networkTopology"] == {"mode": "hard", "highestTierName": "rack"}
    podgroup, _ = expand_job(job())
    assert "networkTopology" not in podgroup["spec"]
