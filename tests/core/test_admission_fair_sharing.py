"""admissionfairsharing: queues ordered by decayed usage (Kueue's Admission Fair Sharing), with
entry penalties, resource weights, reclaim's victim order, and a restart that keeps the order."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from central.errors import InputError
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.plugins.admissionfairsharing import ANNOTATION, alpha
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.testing import RecordingSink
from tests.builders import node, queue
from tests.scenarios.harness import objects_of

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


# (no proportion: its deserved shares would split the one node's 4 CPUs 2 and 2, and fit neither job)
def conf(arguments: str = "usageHalfLifeTime: 1h, usageSamplingInterval: 5m"):
    return load_config('actions: "allocate"\ntiers:\n'
                       f"- plugins: [{{name: priority}}, {{name: gang}}, {{name: admissionfairsharing, arguments: {{{arguments}}}}}]\n"
                       "- plugins: [{name: drf}, {name: predicates}, {name: nodeorder}]\n")


WITHOUT = load_config('actions: "allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
                      "- plugins: [{name: drf}, {name: predicates}, {name: nodeorder}]\n")


def cache_of(pods, podgroups, annotations=None):
    annotations = annotations or {}
    cache = ClusterCache()
    cache.apply(node("n1", cpu="4", memory="16Gi"))
    for name, created in (("qa", "2026-01-01T00:00:00Z"), ("qb", "2026-01-01T01:00:00Z")):
        q = queue(name, weight=1, annotations=annotations.get(name))
        q["metadata"]["creationTimestamp"] = created
        cache.apply(q)
    for obj in objects_of({"podgroups": podgroups, "pods": pods}):
        cache.apply(obj)
    return cache


RUNNING_A = {"ns/old-0": {"group": "old", "cpu": 4, "node": "n1"}}
RUNNING_A_GROUP = {"ns/old": {"minMember": 1, "queue": "qa", "phase": "Running"}}
WAITING = {"ns/a-0": {"group": "a", "cpu": 4}, "ns/b-0": {"group": "b", "cpu": 4}}
WAITING_GROUPS = {"ns/a": {"minMember": 1, "queue": "qa", "phase": "Inqueue"},
                  "ns/b": {"minMember": 1, "queue": "qb", "phase": "Inqueue"}}


def test_kueue_rate():
    assert alpha(3600, 3600) == pytest.approx(0.5)
    assert alpha(300, 3600) == pytest.approx(1 - 0.5 ** (1 / 12))
    assert alpha(300, 0) == 0.0  # no half-life: usage never moves, as Kueue


@pytest.mark.parametrize("arguments, key", [
    ("usageSamplingInterval: 0s", "usageSamplingInterval"),
    ("usageHalfLifeTime: forever", "usageHalfLifeTime"),
    ("resourceWeights: {cpu: -1}", "resourceWeights.cpu"),
    ("usageHalfLife: 1h", "usageHalfLife"),
])
def test_bad_arguments_are_refused_by_name(arguments, key):
    with pytest.raises(InputError) as err:
        conf(arguments)
    assert key in str(err.value)


def test_consumed_is_sampled_as_a_decayed_average():
    cache = cache_of(RUNNING_A, RUNNING_A_GROUP)
    run_cycle(cache, conf(), now=T0)  # the record starts: nothing sampled yet
    run_cycle(cache, conf(), now=T0 + 4 * MINUTE)  # before the sampling interval: unchanged
    assert cache.plugin_memory[("admissionfairsharing", "queues")]["qa"].consumed == {}
    run_cycle(cache, conf(), now=T0 + 5 * MINUTE)
    record = cache.plugin_memory[("admissionfairsharing", "queues")]["qa"]
    # 0 * (1 - alpha) + 4 cores * alpha, alpha = 1 - 0.5^(300/3600); memory held is 0 (the pod asks cpu only)
    assert record.consumed == {"cpu": pytest.approx(4 * alpha(300, 3600))}
    assert record.updated == T0 + 5 * MINUTE


def test_the_queue_that_used_less_goes_first_and_a_restart_keeps_it():
    before, sink = cache_of(RUNNING_A, RUNNING_A_GROUP), RecordingSink()
    for minutes in (0, 30, 60):
        run_cycle(before, conf(), sink, now=T0 + minutes * MINUTE)
    written = dict(sink.of("queue_annotations"))
    assert set(written) == {"qa"}  # qb never held anything: nothing to keep
    record = json.loads(written["qa"][ANNOTATION])
    # two samples of 4 cores, 30 minutes apart: 4 * a, then 4 * a * (1 - a) + 4 * a, a = 1 - 0.5^0.5
    a = alpha(1800, 3600)
    assert record == {"lastUpdate": "2026-01-05T01:00:00Z", "usage": {"cpu": pytest.approx(4 * a * (1 - a) + 4 * a, abs=1e-3)}}

    # qa's job is done; both queues wait with one job for one slot
    before.delete("Pod", "ns", "old-0")
    for obj in objects_of({"podgroups": WAITING_GROUPS, "pods": WAITING}):
        before.apply(obj)
    assert run_cycle(before, conf(), now=T0 + 61 * MINUTE).binds == {"ns/b-0": "n1"}

    restarted = cache_of(WAITING, WAITING_GROUPS, {name: marks for name, marks in written.items()})
    assert run_cycle(restarted, conf(), now=T0 + 61 * MINUTE).binds == {"ns/b-0": "n1"}
    forgot = cache_of(WAITING, WAITING_GROUPS)  # without the annotations: the older queue first
    assert run_cycle(forgot, conf(), now=T0 + 61 * MINUTE).binds == {"ns/a-0": "n1"}
    assert run_cycle(cache_of(WAITING, WAITING_GROUPS), WITHOUT, now=T0).binds == {"ns/a-0": "n1"}


def test_resource_weights_and_queue_weight_scale_usage():
    # qa held 1 core per sample, qb 2Gi of memory: with memory weighted 0 qb is the lighter one,
    # with cpu weighted 0 qa is; qa's weight 4 would also make it lighter
    records = {"qa": {ANNOTATION: '{"lastUpdate":"2026-01-05T00:00:00Z","usage":{"cpu":1}}'},
               "qb": {ANNOTATION: '{"lastUpdate":"2026-01-05T00:00:00Z","usage":{"memory":2147483648}}'}}
    now = T0 + MINUTE
    assert run_cycle(cache_of(WAITING, WAITING_GROUPS, records),
                     conf("resourceWeights: {memory: 0}"), now=now).binds == {"ns/b-0": "n1"}
    assert run_cycle(cache_of(WAITING, WAITING_GROUPS, records),
                     conf("resourceWeights: {cpu: 0, memory: 1}"), now=now).binds == {"ns/a-0": "n1"}


def test_entry_penalty_counts_what_a_session_placed_until_the_next_sample():
    cache = cache_of(WAITING, WAITING_GROUPS)
    run_cycle(cache, conf(), now=T0)
    record = cache.plugin_memory[("admissionfairsharing", "queues")]["qa"]
    assert record.penalty == {"cpu": pytest.approx(4 * alpha(300, 3600))}  # qa's job, the older queue's, was placed
    run_cycle(cache, conf(), now=T0 + 5 * MINUTE)
    record = cache.plugin_memory[("admissionfairsharing", "queues")]["qa"]
    assert record.penalty == {}  # the sample took the allocation in
    assert record.consumed == {"cpu": pytest.approx(4 * alpha(300, 3600))}


@pytest.mark.parametrize("victim_order, first", [("true", "qa"), ("false", "qb")])
def test_reclaim_takes_from_the_heavier_queue_first_when_asked(victim_order, first):
    # proportion orders queues (qa has the higher priority); without the plugin's victim order,
    # victims come from the inverse of that order (qb first); with it, from the heavier qa
    records = {"qa": {ANNOTATION: '{"lastUpdate":"2026-01-05T00:00:00Z","usage":{"cpu":3}}'},
               "qb": {ANNOTATION: '{"lastUpdate":"2026-01-05T00:00:00Z","usage":{"cpu":1}}'}}
    c = load_config('actions: "reclaim"\ntiers:\n- plugins: [{name: priority}, {name: gang}, {name: proportion}]\n'
                    f"- plugins: [{{name: admissionfairsharing, arguments: {{victimQueueOrder: {victim_order}}}}}]\n")
    cache = cache_of(WAITING, WAITING_GROUPS, records)
    cache.apply(queue("qa", weight=1, priority=1, annotations=records["qa"]))
    session = Session(cache, c, now=T0 + MINUTE)
    try:
        qa, qb = session.queues["qa"], session.queues["qb"]
        assert session.queue_less(qa, qb)
        assert session.victim_queue_less(qa, qb, qb) == (first == "qa")
    finally:
        session.rollback()
