"""HyperNodes from node labels (Volcano's `label` discovery source), as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from central.controllers.hypernode_discovery import SOURCE_LABEL, desired_hypernodes, discovered, parse_config, plan
from central.errors import InputError

CONFIG = """
networkTopologyDiscovery:
- source: ufm
  enabled: true
  config: {endpoint: https://ufm:8080}
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      rackSpine:
      - nodeLabel: example.com/spine
      - nodeLabel: example.com/rack
      - nodeLabel: kubernetes.io/hostname
"""


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {k.replace("_", "/"): v for k, v in labels.items()}}}


def racks() -> list[dict[str, Any]]:
    # racks r1 {n0, n1} and r2 {n2, n3} under spine s1; n4 on rack r3 with no spine label; n5 unlabelled
    return [node("n0", **{"example.com_rack": "r1", "example.com_spine": "s1"}),
            node("n1", **{"example.com_rack": "r1", "example.com_spine": "s1"}),
            node("n2", **{"example.com_rack": "r2", "example.com_spine": "s1"}),
            node("n3", **{"example.com_rack": "r2", "example.com_spine": "s1"}),
            node("n4", **{"example.com_rack": "r3"}),
            node("n5")]


def shape(hypernodes: dict[str, dict[str, Any]]) -> dict[tuple[int, str], list[str]]:
    """(tier, label value) -> member names, with HyperNode members shown by their label value."""
    value = {name: next(v for k, v in hn["metadata"]["labels"].items() if k != SOURCE_LABEL)
             for name, hn in hypernodes.items()}
    return {(hn["spec"]["tier"], value[name]): sorted(value.get(m["selector"]["exactMatch"]["name"],
                                                                  m["selector"]["exactMatch"]["name"])
                                                        for m in hn["spec"]["members"])
            for name, hn in hypernodes.items()}


def test_the_label_source_reads_its_levels_lowest_tier_first_without_the_hostname() -> None:
    assert parse_config(CONFIG) == {"rackSpine": ["example.com/rack", "example.com/spine"]}
    assert parse_config("networkTopologyDiscovery: [{source: label, enabled: false}]") is None
    assert parse_config("") is None  # no label source: discovered HyperNodes are left alone


@pytest.mark.parametrize(("text", "where"), [
    ("networkTopologyDiscovery: {source: label}", "networkTopologyDiscovery"),
    ("networkTopologyDiscovery: [{source: label, enabled: true, config: {networkTopologyTypes: "
     "{aVeryLongTopologyTypeName: [{nodeLabel: a}, {nodeLabel: b}]}}}]",
     "networkTopologyDiscovery[0].config.networkTopologyTypes.aVeryLongTopologyTypeName"),
    ("networkTopologyDiscovery: [{source: label, enabled: true, config: {networkTopologyTypes: "
     "{t: [{nodeLabel: a}, {nodeLabel: a}]}}}]", "networkTopologyDiscovery[0].config.networkTopologyTypes.t"),
])
def test_a_bad_config_names_the_field(text: str, where: str) -> None:
    with pytest.raises(InputError) as err:
        parse_config(text)
    assert err.value.where == where


def test_nodes_build_a_tree_of_their_labels() -> None:
    types = parse_config(CONFIG)
    assert types is not None
    hypernodes = desired_hypernodes(types, racks(), {})
    assert shape(hypernodes) == {(1, "r1"): ["n0", "n1"], (1, "r2"): ["n2", "n3"], (1, "r3"): ["n4"],
                                 (2, "s1"): ["r1", "r2"]}
    r1 = next(hn for hn in hypernodes.values() if hn["metadata"]["labels"].get("example.com/rack") == "r1")
    assert r1["metadata"]["name"].startswith("hypernode-rackspine-tier1-")
    assert r1["metadata"]["labels"][SOURCE_LABEL] == "label" and r1["spec"]["tierName"] == "example.com/rack"
    assert {m["type"] for m in r1["spec"]["members"]} == {"Node"}
    # the names are stable: the same labels give the same names after a restart
    assert desired_hypernodes(types, list(reversed(racks())), {}).keys() == hypernodes.keys()


def test_a_sync_creates_updates_and_deletes_only_what_it_discovered() -> None:
    types = parse_config(CONFIG)
    assert types is not None
    first = desired_hypernodes(types, racks(), {})
    hand_made = {"spine-x": {"metadata": {"name": "spine-x"}, "spec": {"tier": 3, "members": []}}}
    stored = {**{name: {**hn, "metadata": {**hn["metadata"], "resourceVersion": "7"}} for name, hn in first.items()},
              **hand_made}
    existing = discovered(stored)
    assert "spine-x" not in existing
    assert plan(desired_hypernodes(types, racks(), existing), existing) == ([], [], [])  # nothing to do twice
    moved = racks()
    moved[1]["metadata"]["labels"]["example.com/rack"] = "r2"  # n1 moves to rack r2
    moved[4]["metadata"]["labels"]["example.com/rack"] = "r1"  # n4 joins r1: r3 is empty, its spine-less rack goes
    create, update, delete = plan(desired_hypernodes(types, moved, existing), existing)
    assert create == []
    assert {u["metadata"]["labels"]["example.com/rack"] for u in update} == {"r1", "r2"}
    assert all(u["metadata"]["resourceVersion"] == "7" for u in update)  # an update of what was read
    r3 = next(name for name, hn in first.items() if hn["metadata"]["labels"].get("example.com/rack") == "r3")
    assert delete == [r3]
