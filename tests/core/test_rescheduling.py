"""The rescheduling plugin: its arguments, and pods moving off an over-used node (the scenario
cases in tests/scenarios/rescheduling.yaml cover the victim choice)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from central.errors import InputError
from central.model.fields import parse_time
from central.scheduler import load_config
from central.sim.manifests import Manifests, load_into
from central.sim.simulate import simulate
from tests.scenarios.harness import objects_of, run_case


def conf_text(arguments: dict[str, Any], actions: str = "shuffle", *others: str) -> str:
    plugins = [{"name": "rescheduling", "arguments": arguments}, *({"name": name} for name in others)]
    return json.dumps({"actions": actions, "tiers": [{"plugins": plugins}]})


LNU = "lowNodeUtilization"


@pytest.mark.parametrize("arguments, where, says", [
    pytest.param({"interval": "soon"}, "arguments.interval", "expected a duration", id="interval-not-a-duration"),
    pytest.param({"interval": 5}, "arguments.interval", "expected str", id="interval-not-a-string"),
    pytest.param({"metricsPeriod": "5 minutes"}, "arguments.metricsPeriod", "expected a duration", id="metrics-period"),
    pytest.param({"strategies": {"name": LNU}}, "arguments.strategies", "expected list", id="strategies-not-a-list"),
    pytest.param({"strategies": [{"name": "highNodeUtilization"}]}, "strategies[0].name",
                 "unknown strategy 'highNodeUtilization'; valid: lowNodeUtilization", id="unknown-strategy"),
    pytest.param({"strategies": [{"name": LNU, "parms": {}}]}, "strategies[0].parms", "unknown key", id="typo-key"),
    pytest.param({"strategies": [{"name": LNU, "params": {"thresholds": {"cpu": 120}}}]},
                 "strategies[0].params.thresholds.cpu", "percentage from 0 to 100", id="threshold-over-100"),
    pytest.param({"strategies": [{"name": LNU, "params": {"targetThresholds": {"gpu": 50}}}]},
                 "strategies[0].params.targetThresholds.gpu", "unknown resource", id="unknown-resource"),
    pytest.param({"strategies": [{"name": LNU, "params": {"thresholds": "20"}}]},
                 "strategies[0].params.thresholds", "expected a map", id="thresholds-not-a-map"),
    pytest.param({"strategies": [{"name": LNU, "params": {"numberOfNode": 3}}]},
                 "strategies[0].params.numberOfNode", "unknown parameter", id="unknown-parameter"),
    pytest.param({"evictionPeriod": "1m"}, "arguments.evictionPeriod", "unknown argument", id="unknown-argument"),
])
def test_bad_arguments_name_the_plugin_and_argument(arguments, where, says):
    with pytest.raises(InputError) as err:
        load_config(conf_text(arguments), "conf")
    line = str(err.value)
    assert "plugin rescheduling" in line and where in line and says in line, line
    assert "\n" not in line


def test_volcano_arguments_load():
    """Volcano's documented example, with the parameters it accepts and does not use."""
    params = {"thresholds": {"cpu": 20, "memory": 20, "pods": 20}, "targetThresholds": {"cpu": 60, "memory": 60, "pod": 60},
              "thresholdPriorityClassName": "system-cluster-critical", "nodeFit": True, "numberOfNodes": 0}
    conf = load_config(conf_text({"interval": "10m", "metricsPeriod": "5m",
                                  "strategies": [{"name": LNU, "params": params}]}), "conf")
    settings = conf.plugin("rescheduling").settings
    assert settings.interval == timedelta(minutes=10)
    strategy = settings.strategies[0]
    assert strategy.thresholds == {"cpu": 20, "memory": 20, "pods": 20}
    assert strategy.target_thresholds == {"cpu": 60, "memory": 60, "pods": 60}


def test_evicted_pods_move_to_the_under_used_node():
    """Cycle 3 evicts two of hot's pods; their controller recreates them, and allocate puts
    them on the under-used node (least requested), where they stay."""
    conf = conf_text({"interval": "1s", "strategies": [{"name": LNU, "params": {
        "thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 50, "memory": 50}}}]},
        "enqueue, allocate, backfill, shuffle", "gang", "predicates", "proportion", "nodeorder")
    case = {"cycles": 3, "config": conf,
            "nodes": {"hot": {"cpu": 4, "memory": "16Gi"}, "cold": {"cpu": 4, "memory": "16Gi"}},
            "pods": {f"ns/p{i}": {"cpu": 1, "memory": "1Gi", "node": "hot", "priority": i} for i in range(4)}}
    # hot 4/4 = 100% > 50; cold 0% < 20. Room on cold: 50% of 4 = 2 cpu -> p0 and p1 go.
    result, cache = run_case(case)
    assert sorted(result.evictions) == ["ns/p0", "ns/p1"]
    assert "rescheduling: lowNodeUtilization, node hot above its target utilization" in result.eviction_reasons["ns/p0"]
    recreated = {f"ns/p{i}-new": {"cpu": 1, "memory": "1Gi", "priority": i} for i in range(2)}
    load_into(cache, Manifests(objects=[("recreated", o) for o in objects_of({"pods": recreated})]))
    later = simulate(cache, load_config(conf, "conf"), 3, parse_time("2026-01-01T01:00:03Z", "now"))
    assert later.binds == {"ns/p0-new": "cold", "ns/p1-new": "cold"}
    assert later.evictions == []  # hot 50% and cold 50%: none above 50, nobody moves again

