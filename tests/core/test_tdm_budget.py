"""Property: shuffle never takes a job below its disruption budget, and uses what it allows."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from central.model.cache import ClusterCache
from central.model.fields import parse_time
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

CONF = load_config('actions: "shuffle"\ntiers:\n'
                   '- plugins: [{name: tdm, arguments: {tdm.revocable-zone.rz1: "09:00-18:00"}}]\n')
LENT = {"cpu": 64, "memory": "64Gi", "labels": {"volcano.sh/revocable-zone": "rz1"}}


@st.composite
def jobs(draw):
    podgroups, pods, budgets = {}, {}, {}
    for j in range(draw(st.integers(1, 4))):
        running, pending = draw(st.integers(1, 6)), draw(st.integers(0, 3))
        kind = draw(st.sampled_from(["none", "min", "max"]))
        value = draw(st.sampled_from(["0", "1", "2", "50%", "100%", "34%"]))
        key = "volcano.sh/jdb-" + ("min-available" if kind == "min" else "max-unavailable")
        annotations = {} if kind == "none" else {key: value}
        podgroups[f"ns/j{j}"] = {"minMember": 1, "phase": "Running", "annotations": annotations}
        for t in range(running + pending):
            pods[f"ns/j{j}-{t}"] = {"group": f"j{j}", "cpu": 1, "annotations": {"volcano.sh/preemptable": "true"},
                                    **({"node": "lent"} if t < running else {})}
        budgets[f"ns/j{j}"] = (kind, value, running, running + pending)
    return {"nodes": {"lent": LENT}, "podgroups": podgroups, "pods": pods}, budgets


def allowed(kind: str, value: str, running: int, total: int) -> int:
    resolved = math.ceil(int(value[:-1]) * total / 100) if value.endswith("%") else int(value)
    if kind == "min":
        return max(running - resolved, 0)
    if kind == "max":
        return max(resolved - (total - running), 0)
    return 1


@settings(max_examples=50, deadline=None)
@given(jobs())
def test_shuffle_respects_budgets(generated):
    case, budgets = generated
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    result = run_cycle(cache, CONF, now=parse_time("2026-01-01T20:00:00Z", "now"))
    for job, (kind, value, running, total) in budgets.items():
        evicted = sum(1 for pod in result.evictions if pod.startswith(job + "-"))
        assert evicted == min(allowed(kind, value, running, total), running), (job, kind, value, running, total)
