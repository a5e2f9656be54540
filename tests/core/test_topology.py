"""The HyperNode tree and the network-topology-aware plugin's arguments: a malformed
HyperNode is its own problem (refused by the cache, or left out of the tree with a fault),
never the cycle's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from central.errors import InputError
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.feeder import CacheFeeder
from tests.builders import exact, hypernode, member, node


def cache_of(*objs: dict[str, Any]) -> ClusterCache:
    cache = ClusterCache()
    for obj in objs:
        cache.apply(obj)
    return cache


def members(cache: ClusterCache, name: str) -> set[str]:
    topo = cache.topology()
    return {cache.node_list[i].name for i in np.flatnonzero(topo.hypernodes[name].mask)}


def test_members_by_name_pattern_and_labels_and_the_tree_above_them():
    cache = cache_of(node("a-1"), node("a-2"), node("b-1", labels={"rack": "b"}), node("x"),
                     hypernode("ra", 1, [member(regexMatch={"pattern": "^a-"})]),
                     hypernode("rb", 1, [member(labelMatch={"matchLabels": {"rack": "b"}})]),
                     hypernode("spine", 2, [exact("ra", "HyperNode"), exact("rb", "HyperNode")]))
    topo = cache.topology()
    assert members(cache, "ra") == {"a-1", "a-2"} and members(cache, "rb") == {"b-1"}
    assert members(cache, "spine") == {"a-1", "a-2", "b-1"}
    assert members(cache, "<cluster-top>") == {"a-1", "a-2", "b-1", "x"}
    assert topo.tiers == [1, 2, 3]  # the cluster top one tier above the highest
    assert topo.lca("ra", "rb") == "spine" and topo.lca("ra", "") == "ra"
    assert topo.leaf(cache.nodes["b-1"].index) == "rb" and topo.leaf(cache.nodes["x"].index) == ""


def test_a_label_change_moves_a_node_between_hypernodes():
    cache = cache_of(node("n1", labels={"rack": "a"}),
                     hypernode("ra", 1, [member(labelMatch={"matchLabels": {"rack": "a"}})]))
    assert members(cache, "ra") == {"n1"}
    cache.apply(node("n1", labels={"rack": "b"}))
    assert members(cache, "ra") == set()


@pytest.mark.parametrize("objs, faulted, reason", [
    pytest.param([hypernode("s1", 2, [exact("leaf", "HyperNode")]), hypernode("s2", 2, [exact("leaf", "HyperNode")]),
                  hypernode("leaf", 1, [exact("n1")])],
                 "s2", "spec.members: HyperNode leaf is already a member of HyperNode s1; a HyperNode has one parent",
                 id="two-parents"),
    pytest.param([hypernode("a", 1, [exact("b", "HyperNode")]), hypernode("b", 2, [exact("a", "HyperNode")])],
                 "a", "spec.members: HyperNode members form a cycle: a -> b -> a", id="cycle"),
])
def test_a_malformed_tree_faults_the_hypernode_and_keeps_the_rest(objs, faulted, reason):
    cache = cache_of(node("n1"), *objs)
    topo = cache.topology()
    assert topo.faults[faulted] == reason
    assert faulted not in topo.hypernodes
    assert members(cache, "<cluster-top>") == {"n1"}


def test_the_cache_refuses_an_unreadable_hypernode_and_the_feeder_reports_it():
    refused = []
    cache = ClusterCache()
    feeder = CacheFeeder(cache, on_refused=lambda obj, why: refused.append((obj["metadata"]["name"], why)))
    feeder.handler("Node")("ADDED", node("n1"))
    bad = hypernode("bad", 1, [member(regexMatch={"pattern": "n(["})])
    feeder.handler("HyperNode")("ADDED", bad)
    feeder.handler("HyperNode")("ADDED", hypernode("good", 1, [exact("n1")]))
    assert refused and refused[0][0] == "bad"
    assert refused[0][1].startswith("spec.members[0].selector.regexMatch.pattern: member regexMatch pattern is invalid")
    assert set(cache.hypernodes) == {"good"}
    with pytest.raises(InputError, match="HyperNode bad: spec.members"):
        cache.apply(bad)


@pytest.mark.parametrize("arguments, message", [
    pytest.param("{weight: -1}", "arguments.weight: must not be negative", id="weight"),
    pytest.param("{hypernode.binpack.resources: nvidia.com/gpu, hypernode.binpack.resources.nvidia.com/gpu: -2}",
                 "arguments.hypernode.binpack.resources.nvidia.com/gpu: must not be negative", id="resource"),
    pytest.param("{hypernode.binpack.normal-pod.enable: maybe}", "expected true or false", id="flag"),
    pytest.param("{hypernode.binpack.cpus: 2}", "arguments.hypernode.binpack.cpus: unknown argument", id="typo"),
])
def test_plugin_arguments_are_checked_at_load(arguments, message):
    text = f'actions: "allocate"\ntiers:\n- plugins:\n  - {{name: network-topology-aware, arguments: {arguments}}}\n'
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        load_config(text, "conf")


def test_volcanos_documented_arguments_load():
    text = """actions: "allocate"
tiers:
- plugins:
  - name: network-topology-aware
    arguments:
      weight: 10
      hypernode.binpack.cpu: 5
      hypernode.binpack.memory: 1
      hypernode.binpack.resources: nvidia.com/gpu, example.com/foo
      hypernode.binpack.resources.nvidia.com/gpu: 2
      hypernode.binpack.resources.example.com/foo: 3
      hypernode.binpack.normal-pod.enable: true
      hypernode.binpack.normal-pod.fading: 0.8
      hypernode.gradient.evict.max-hypernodes: 3
"""
    settings = load_config(text, "conf").plugin("network-topology-aware").settings
    assert settings == (10, {"cpu": 5, "memory": 1, "nvidia.com/gpu": 2, "example.com/foo": 3}, True, 0.8, 3)


def test_hypernode_scores_match_volcanos_test_hypernode_order_fn():
    """TestHyperNodeOrderFn, "score hypernodes for a subjob with default plugin arguments"
    (network_topology_aware_test.go): two pending pods of 4 cpu / 4G over a 3-tier tree.
    s4: cpu (0 + 8)/8, memory 8G/8G: mean 1 -> 100; s6: 8/8 and 8G/16G -> 75; s1: 8/12 and
    8G/16G -> 58.3; s2: 8/12 and 8G/32G -> 45.8; s0 and the cluster top: 8/24 and 8G/48G -> 25;
    s3 and s5 (4 cpu) overflow -> 0."""
    from central.framework.session import Session
    from tests.scenarios.harness import objects_of

    case = {"nodes": {"s3-n1": {"cpu": 2, "memory": "4G"}, "s3-n2": {"cpu": 2, "memory": "4G"},
                      "s4-n1": {"cpu": 4, "memory": "4G"}, "s4-n2": {"cpu": 4, "memory": "4G"},
                      "s5-n1": {"cpu": 2, "memory": "8G"}, "s5-n2": {"cpu": 2, "memory": "8G"},
                      "s6-n1": {"cpu": 4, "memory": "8G"}, "s6-n2": {"cpu": 4, "memory": "8G"}},
            "hypernodes": {"s0": {"tier": 3, "hypernodes": ["s1", "s2"]}, "s1": {"tier": 2, "hypernodes": ["s3", "s4"]},
                           "s2": {"tier": 2, "hypernodes": ["s5", "s6"]},
                           **{f"s{i}": {"tier": 1, "nodes": [f"s{i}-n1", f"s{i}-n2"]} for i in (3, 4, 5, 6)}},
            "podgroups": {"ns1/pg1": {"minMember": 2, "queue": "default", "phase": "Inqueue",
                                      "networkTopology": {"mode": "hard", "highestTierAllowed": 2}}},
            "pods": {"ns1/p1": {"group": "pg1", "cpu": 4, "memory": "4G"}, "ns1/p2": {"group": "pg1", "cpu": 4, "memory": "4G"}}}
    conf = load_config('actions: "allocate"\ntiers:\n- plugins:\n  - name: network-topology-aware\n', "conf")
    ssn = Session(cache_of(*objects_of(case)), conf)
    try:
        (plugin,) = ssn.tiers[0]
        candidates = list(plugin.topo.hypernodes.values())
        scores = plugin.hypernode_order(ssn.jobs["ns1/pg1"], candidates)
        assert {hn.name: round(float(s), 1) for hn, s in zip(candidates, scores)} == {
            "s0": 25.0, "s1": 58.3, "s2": 45.8, "s3": 0.0, "s4": 100.0, "s5": 0.0, "s6": 75.0, "<cluster-top>": 25.0}
    finally:
        ssn.rollback()
