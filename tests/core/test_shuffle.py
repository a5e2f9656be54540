"""victim_tasks combines as Volcano's VictimTasks; shuffle evicts with the plugin's reason."""

import pytest

from central.framework.points import Points, union_first_tier
from central.model.cache import ClusterCache
from central.model.fields import parse_time
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.core.plugins import plugin
from tests.scenarios.harness import objects_of

A, B, C = "a", "b", "c"


def victims(*pairs):
    return lambda running: [(item, why) for item, why in pairs]


@pytest.mark.parametrize("tiers, flags, expected", [
    pytest.param([[victims((A, "x")), victims((B, "y"), (A, "z"))]], {}, [(A, "x"), (B, "y")],
                 id="union-first-reason-kept"),
    pytest.param([[victims()], [victims((C, "w"))]], {}, [(C, "w")], id="empty-tier-passes-on"),
    pytest.param([[victims((A, "x"))], [victims((C, "w"))]], {}, [(A, "x")], id="first-tier-with-victims-decides"),
    pytest.param([[victims((A, "x"))], [victims((C, "w"))]], {"enabledVictim": False}, [], id="enabledVictim-off"),
])
def test_victim_tasks_union_within_the_first_tier(tiers, flags, expected):
    points = Points([[plugin(f"p{i}{j}", flags, victim_tasks=fn) for j, fn in enumerate(tier)]
                     for i, tier in enumerate(tiers)])
    assert union_first_tier(points.victim_tasks, []) == expected


def test_shuffle_eviction_carries_the_plugins_reason():
    case = {"nodes": {"lent": {"cpu": 4, "memory": "8Gi", "labels": {"volcano.sh/revocable-zone": "rz1"}}},
            "pods": {"ns/p": {"cpu": 1, "node": "lent", "annotations": {"volcano.sh/preemptable": "true"}}}}
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    conf = load_config('actions: "shuffle"\ntiers:\n'
                       '- plugins: [{name: tdm, arguments: {tdm.revocable-zone.rz1: "09:00-18:00"}}]\n')
    result = run_cycle(cache, conf, now=parse_time("2026-01-01T18:30:00Z", "now"))
    assert result.evictions == {
        "ns/p": "Shuffle: evicted by the scheduler (tdm: revocable zone rz1 is outside its window 09:00-18:00)"}
