"""resource-strategy-fit's scores and proportional predicate, from Volcano's unit tests
(TestScore, and the sra and proportional cases) restated on a session."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from central.errors import InputError
from central.framework.plugin import Arguments
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.fields import parse_time
from central.plugins.resourcestrategyfit import ResourceStrategyFit, Strategy, strategy_for, valid_pattern
from central.scheduler import load_config
from central.sim.manifests import Manifests, load_into
from tests.scenarios.harness import objects_of

TYPE, WEIGHTS = "volcano.sh/resource-strategy-scoring-type", "volcano.sh/resource-strategy-weight"


def session(nodes: dict[str, dict[str, Any]], pods: dict[str, dict[str, Any]], arguments: dict[str, Any]) -> Session:
    cache = ClusterCache()
    load_into(cache, Manifests(objects=[("t", o) for o in objects_of({"nodes": nodes, "pods": pods})]))
    conf = {"actions": "allocate", "tiers": [{"plugins": [{"name": "resource-strategy-fit", "arguments": arguments}]}]}
    return Session(cache, load_config(json.dumps(conf)), now=parse_time("2026-01-01T01:00:00Z", "now"))


def plugin_of(ssn: Session) -> Any:
    return next(p for tier in ssn.tiers for p in tier if p.name == "resource-strategy-fit")


def strategies(cpu: tuple[str, int] | None, memory: tuple[str, int] | None) -> dict[str, Any]:
    return {name: {"type": kind, "weight": w} for name, given in (("cpu", cpu), ("memory", memory))
            if given is not None for kind, w in [given]}


LEAST, MOST = "LeastAllocated", "MostAllocated"


def score(request: tuple[int, int], used: tuple[int, int], alloc: tuple[int, int], resources: dict[str, Any],
          weight: int = 10, annotations: dict[str, str] | None = None) -> float:
    """Volcano's buildTaskInfo/buildNodeInfo: cpu in millicores, memory in bytes."""
    node = {"cpu": f"{alloc[0]}m", "memory": str(alloc[1]), "pods": 10}
    pods: dict[str, dict[str, Any]] = {"ns/p": {"cpu": f"{request[0]}m", "memory": str(request[1]),
                                                "annotations": annotations or {}}}
    if used != (0, 0):
        pods["ns/used"] = {"cpu": f"{used[0]}m", "memory": str(used[1]), "node": "n1"}
    ssn = session({"n1": node}, pods, {"resourceStrategyFitWeight": weight, "resources": resources})
    got = plugin_of(ssn).batch_node_order(ssn.cache.tasks["ns/p"], np.array([ssn.cache.nodes["n1"].index]))
    return float(got[0])


@pytest.mark.parametrize("request_, used, alloc, resources, weight, annotations, want", [
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10, None, 400, id="test1"),
    pytest.param((100, 100), (200, 200), (400, 400), strategies((LEAST, 1), (LEAST, 1)), 10, None, 250, id="test2"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((MOST, 1), (MOST, 1)), 10, None, 600, id="test3"),
    pytest.param((100, 100), (200, 200), (400, 400), strategies((MOST, 1), (MOST, 1)), 10, None, 750, id="test4"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 2), (MOST, 1)), 10, None, 466.66666667,
                 id="test5"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 1), (MOST, 2)), 10, None, 533.33333333,
                 id="test6"),
    pytest.param((0, 100), (200, 200), (500, 500), strategies((LEAST, 1), (MOST, 2)), 10, None, 600, id="test7"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies(None, (MOST, 2)), 10, None, 600, id="test9"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10,
                 {TYPE: LEAST, WEIGHTS: '{"cpu": 2, "memory": 1}'}, 400, id="pod-level-scoring-least-allocated"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10,
                 {TYPE: MOST, WEIGHTS: '{"cpu": 1, "memory": 2}'}, 600, id="pod-level-scoring-most-allocated"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10,
                 {TYPE: LEAST, WEIGHTS: "invalid-json"}, 0, id="pod-level-scoring-invalid-json"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10,
                 {TYPE: LEAST, WEIGHTS: '{"cpu": 2}'}, 400, id="pod-level-scoring-missing-resource-weight"),
    pytest.param((0, 0), (200, 200), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10, None, 0,
                 id="zero-resources-requested"),
    pytest.param((100, 100), (500, 500), (500, 500), strategies((LEAST, 1), (LEAST, 1)), 10, None, 0,
                 id="node-fully-allocated"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 3), (MOST, 1)), 10, None, 450,
                 id="mixed-scoring-strategies"),
    pytest.param((100, 100), (200, 200), (500, 500), strategies((LEAST, 5), (LEAST, 5)), 20, None, 800,
                 id="high-weight-scenario"),
])
def test_volcano_scores(request_: tuple[int, int], used: tuple[int, int], alloc: tuple[int, int],
                        resources: dict[str, Any], weight: int, annotations: dict[str, str] | None, want: float) -> None:
    assert score(request_, used, alloc, resources, weight, annotations) == pytest.approx(want, abs=1e-6)


def test_a_node_lacking_a_resource_scores_it_zero_and_still_counts_its_weight() -> None:
    # Volcano's test8 (cpu allocatable 0): memory's MostAllocated 2 x 300/400 over weights 3.
    ssn = session({"n1": {"cpu": "1", "memory": "400", "pods": 10}, "n2": {"memory": "400", "pods": 10}},
                  {"ns/p": {"cpu": "100m", "memory": "100"}, "ns/used": {"memory": "200", "node": "n2"}},
                  {"resources": strategies((LEAST, 1), (MOST, 2))})
    got = plugin_of(ssn).batch_node_order(ssn.cache.tasks["ns/p"], np.array([ssn.cache.nodes["n2"].index]))
    assert got.tolist() == pytest.approx([500.0])


def test_the_longest_matching_prefix_wins_and_an_exact_name_over_both() -> None:
    table = {"nvidia.com/*": Strategy(MOST, 2), "nvidia.*": Strategy(LEAST, 1), "nvidia.com/gpu-x": Strategy(LEAST, 9)}
    assert strategy_for("nvidia.com/gpu", table) == Strategy(MOST, 2)
    assert strategy_for("nvidia.com/gpu-x", table) == Strategy(LEAST, 9)
    assert strategy_for("amd.com/gpu", table) is None
    assert [valid_pattern(p) for p in ("*", "a/*", "a/*/b", "a**", "a")] == [False, True, False, False, True]


def test_sra_keeps_pods_that_need_no_gpu_off_gpu_nodes() -> None:
    nodes = {"cpu-node": {"cpu": 8, "memory": "16Gi", "pods": 10},
             "gpu-node": {"cpu": 8, "memory": "16Gi", "nvidia.com/gpu": 4, "pods": 10}}
    ssn = session(nodes, {"ns/cpu-pod": {"cpu": 1, "memory": "1Gi"},
                          "ns/gpu-pod": {"cpu": 1, "memory": "1Gi", "nvidia.com/gpu": 1}},
                  {"resourceStrategyFitWeight": 0,
                   "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 10,
                           "resourceWeight": {"nvidia.com/gpu": 1}}})
    rows = np.array([ssn.cache.nodes[n].index for n in ("cpu-node", "gpu-node")])
    plugin = plugin_of(ssn)
    assert plugin.node_order(ssn.cache.tasks["ns/cpu-pod"], rows).tolist() == [1000.0, 0.0]
    # a node lacking a resource the pod asks for scores 0; on the GPU node 1 - 1/1 = 0 too
    assert plugin.node_order(ssn.cache.tasks["ns/gpu-pod"], rows).tolist() == [0.0, 0.0]
    assert plugin.batch_node_order(ssn.cache.tasks["ns/cpu-pod"], rows) is None  # strategies off


def test_proportional_keeps_cpu_and_memory_for_the_idle_gpus() -> None:
    # 4 idle GPUs at 1 core and 2 GB each keep 4 cores and 8 GB: 6 of 8 cores taken leaves 2.
    nodes = {"gpu-node": {"cpu": 8, "memory": "64G", "nvidia.com/gpu": 4, "pods": 10},
             "cpu-node": {"cpu": 8, "memory": "64G", "pods": 10}}
    pods = {"ns/big": {"cpu": 6, "memory": "1G"}, "ns/small": {"cpu": 4, "memory": "1G"},
            "ns/gpu": {"cpu": 6, "memory": "1G", "nvidia.com/gpu": 1}}
    ssn = session(nodes, pods, {"proportional": {"enable": True, "resources": "nvidia.com/gpu",
                                                 "resourceProportion": {"nvidia.com/gpu.cpu": 1,
                                                                        "nvidia.com/gpu.memory": 2}}})
    plugin, rows = plugin_of(ssn), np.array([ssn.cache.nodes[n].index for n in ("gpu-node", "cpu-node")])
    (check,) = plugin.predicate(ssn.cache.tasks["ns/big"], rows)
    assert check.ok.tolist() == [False, True] and check.reason == "proportional of resource nvidia.com/gpu check failed"
    assert plugin.predicate(ssn.cache.tasks["ns/small"], rows) == []  # 4 cores left: exactly enough
    assert plugin.predicate(ssn.cache.tasks["ns/gpu"], rows) == []  # asks for a GPU: not held back


def test_the_defaults_and_volcanos_normalisations() -> None:
    default = ResourceStrategyFit.read_arguments(Arguments("resource-strategy-fit", {}))
    assert default.weight == 10 and default.strategies == {"cpu": Strategy(LEAST, 1), "memory": Strategy(LEAST, 1)}
    odd = ResourceStrategyFit.read_arguments(Arguments("resource-strategy-fit", {
        "resourceStrategyFitWeight": -3,
        "resources": {"cpu": {"type": "Nonsense", "weight": 0}, "*": {"type": MOST, "weight": 1}}}))
    assert odd.weight == 10 and odd.strategies == {"cpu": Strategy(LEAST, 1)}


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(InputError, match=r"arguments.resources.cpu"):
        session({}, {}, {"resources": {"cpu": "MostAllocated"}})
    with pytest.raises(InputError, match=r"arguments.sra.weight"):
        session({}, {}, {"sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": "heavy"}})
