"""reservation: a starving job gets the nodes where it fits soonest (by the running pods'
expected ends), others backfill only what ends before, the reservation is a PodGroup
condition and an Event, survives a restart, and is released when the job starts or can
never fit. Also the runtime estimates it reads."""

from datetime import datetime, timedelta, timezone

import pytest

from central.errors import InputError
from central.model import runtime_estimate as estimate
from central.model.cache import ClusterCache
from central.model.jobs import build_podgroup
from central.model.jobspec import parse_job
from central.plugins.reservation import CONDITION, OCCUPYING, reserved_nodes
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)
MINUTE = timedelta(minutes=1)


def conf(arguments: str = "reservation.waitThreshold: 30m"):
    return load_config('actions: "enqueue, allocate"\ntiers:\n'
                       f"- plugins: [{{name: reservation, arguments: {{{arguments}}}}}, {{name: priority}}, {{name: gang}}]\n"
                       "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n")


def est(duration: str) -> dict[str, str]:
    return {estimate.ANNOTATION: duration}


# n1 frees 2 of its 4 CPUs in 10 minutes; n2 stays full for an hour. The gang (one 4-CPU pod)
# has waited an hour: it fits soonest on n1, at 12:10.
CASE = {
    "nodes": {"n1": {"cpu": 4, "memory": "16Gi"}, "n2": {"cpu": 4, "memory": "16Gi"}},
    "queues": {"default": {"weight": 1}},
    "podgroups": {
        "ns/a": {"minMember": 1, "queue": "default", "phase": "Running"},
        "ns/b": {"minMember": 1, "queue": "default", "phase": "Running"},
        "ns/gang": {"minMember": 1, "queue": "default", "phase": "Inqueue", "created": "2026-01-05T11:00:00Z"},
    },
    "pods": {
        "ns/a-0": {"group": "a", "cpu": 2, "node": "n1", "scheduled": "2026-01-05T11:50:00Z", "annotations": est("20m")},
        "ns/b-0": {"group": "b", "cpu": 4, "node": "n2", "scheduled": "2026-01-05T11:50:00Z", "annotations": est("70m")},
        "ns/gang-0": {"group": "gang", "cpu": 4, "created": "2026-01-05T11:00:00Z"},
    },
}


def small(name: str, runtime: str) -> dict:
    return {"podgroups": {f"ns/{name}": {"minMember": 1, "queue": "default", "phase": "Inqueue",
                                         "created": "2026-01-05T11:59:00Z", "annotations": est(runtime)}},
            "pods": {f"ns/{name}-0": {"group": name, "cpu": 2, "created": "2026-01-05T11:59:00Z"}}}


def cache_of(*cases, conditions=None):
    cache = ClusterCache()
    for case in cases:
        for obj in objects_of(case):
            if obj["kind"] == "PodGroup" and conditions and obj["metadata"]["name"] in conditions:
                obj["status"]["conditions"] = conditions[obj["metadata"]["name"]]
            cache.apply(obj)
    return cache


def reserved_condition(result, key="ns/gang"):
    return next((c for c in result.podgroups[key]["conditions"] if c["type"] == CONDITION), None)


def test_the_starving_job_reserves_where_it_fits_soonest_and_short_jobs_backfill():
    cache = cache_of(CASE, small("short", "5m"), small("long", "30m"))
    result = run_cycle(cache, conf(), now=T0)
    condition = reserved_condition(result)
    assert condition["status"] == "True" and condition["message"].endswith("; nodes n1")
    assert "expected at 2026-01-05T12:10:00Z" in condition["message"]
    assert ("ns/gang", "Normal", "Reserved", condition["message"]) in result.events
    # the 5-minute job ends before the reservation matures: it takes n1's 2 free CPUs
    assert result.binds == {"ns/short-0": "n1"}
    assert "reserved for PodGroup ns/gang" in result.pending_reasons["ns/long-0"]


def test_a_long_job_may_take_what_the_reservation_leaves_free_at_maturity():
    wide = {**CASE, "nodes": {"n1": {"cpu": 8, "memory": "16Gi"}, "n2": {"cpu": 4, "memory": "16Gi"}},
            "pods": {**CASE["pods"], "ns/a-0": {**CASE["pods"]["ns/a-0"], "cpu": 6}}}
    cache = cache_of(wide, small("long", "30m"))
    result = run_cycle(cache, conf(), now=T0)
    # n1 has 2 CPUs free now, and at maturity 8 - 4 reserved: room for the 2-CPU job beside
    assert result.binds == {"ns/long-0": "n1"}
    assert reserved_condition(result)["status"] == "True"


def test_no_reservation_before_the_threshold_and_none_in_the_default_configuration():
    cache = cache_of(CASE, small("long", "30m"))
    result = run_cycle(cache, conf("reservation.waitThreshold: 2h"), now=T0)
    assert reserved_condition(result) is None and result.binds == {"ns/long-0": "n1"}


def test_a_restarted_scheduler_keeps_the_reservation_from_the_podgroup_condition():
    first = run_cycle(cache_of(CASE), conf(), now=T0)
    condition = reserved_condition(first)
    # a new cache (a restarted scheduler) sees the PodGroup with its condition, nothing else
    restarted = cache_of(CASE, small("long", "30m"), conditions={"gang": [condition]})
    result = run_cycle(restarted, conf(), now=T0 + MINUTE)
    assert reserved_condition(result)["message"].endswith("; nodes n1")
    assert not [e for e in result.events if e[2] == "Reserved"]  # held, not made again
    assert "ns/long-0" not in result.binds


def test_the_reservation_is_released_when_the_job_starts():
    cache = cache_of(CASE)
    run_cycle(cache, conf(), now=T0)
    cache.delete("Pod", "ns", "a-0")  # n1 frees: the gang fits
    result = run_cycle(cache, conf(), now=T0 + 10 * MINUTE)
    assert result.binds == {"ns/gang-0": "n1"}
    cache.apply({**objects_of(CASE)[-1], "spec": {**objects_of(CASE)[-1]["spec"], "nodeName": "n1"},
                 "status": {"phase": "Running"}})
    result = run_cycle(cache, conf(), now=T0 + 11 * MINUTE)
    condition = reserved_condition(result)
    assert condition["status"] == "False" and condition["reason"] == "Started"
    assert any(e[2] == "ReservationReleased" for e in result.events)


def test_a_job_that_can_never_fit_gets_no_reservation_and_loses_one_it_held():
    huge = {**CASE, "pods": {**CASE["pods"], "ns/gang-0": {"group": "gang", "cpu": 6}}}
    held = {"type": CONDITION, "status": "True", "reason": "Reserved", "message": "x; nodes n1"}
    result = run_cycle(cache_of(huge, conditions={"gang": [held]}), conf(), now=T0)
    condition = reserved_condition(result)
    assert condition["status"] == "False" and condition["reason"] == "NeverFits"
    assert reserved_nodes(cache_of(huge).jobs["ns/gang"]) is None


@pytest.mark.parametrize("arguments, key", [
    ("reservation.waitThreshold: soon", "reservation.waitThreshold"),
    ("reservation.maxReservations: 0", "reservation.maxReservations"),
    ("reservation.backfil: false", "reservation.backfil"),
])
def test_bad_arguments_are_refused_by_name(arguments, key):
    with pytest.raises(InputError) as err:
        conf(arguments)
    assert key in str(err.value)


def test_runtime_estimates_come_from_the_pod_then_the_job_then_the_queue_history():
    cache = cache_of(CASE, small("long", "30m"))
    task, job = cache.tasks["ns/long-0"], cache.jobs["ns/long"]
    history = estimate.RuntimeHistory(size=3)
    assert estimate.runtime(task, job, history, 60.0) == 1800.0  # the PodGroup's annotation
    task.annotations[estimate.ANNOTATION] = "2m"
    assert estimate.runtime(task, job, history, 60.0) == 120.0
    job.annotations.pop(estimate.ANNOTATION)
    task.annotations[estimate.ANNOTATION] = "soon"  # unreadable: ignored
    assert estimate.runtime(task, job, history, 60.0) == 60.0
    for seconds in (10.0, 500.0, 20.0, 30.0):  # the oldest falls out of the 3 kept
        history.observe("default", seconds)
    assert estimate.runtime(task, job, history, 60.0) == 30.0
    history.observe("default", 700.0)  # the median moves with each observation, asked or not in between
    history.observe("default", 800.0)
    assert estimate.runtime(task, job, history, 60.0) == 700.0
    assert history.copy().typical("default") == 700.0 and history.typical("other") is None
    assert estimate.expected_end(100.0, 50.0, now=120.0) == 150.0
    assert estimate.expected_end(100.0, 50.0, now=400.0) == 400.0 + estimate.OVERRUN_GRACE


def test_a_jobs_running_estimate_reaches_its_podgroup():
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "ns", "uid": "u1"},
           "spec": {"runningEstimate": "45m", "tasks": [{"name": "t", "replicas": 1, "template": {
               "spec": {"containers": [{"name": "c", "image": "i"}]}}}]}}
    assert build_podgroup(parse_job(job))["metadata"]["annotations"][estimate.ANNOTATION] == "45m"


def test_pods_seen_placed_are_read_again_only_for_changed_jobs_and_match_a_full_read():
    """Each session reads again only the jobs whose pods changed (and every job once the nodes
    change); what it keeps equals a walk over every node's pods, and every pod that ended is
    observed once, with the runtime since its start."""
    cache = cache_of(CASE, small("long", "30m"))
    steps = [
        lambda: None,
        lambda: cache.apply({**case_pod("a-0"), "status": {"phase": "Succeeded"}}),  # ran 11:50 -> 12:01
        lambda: cache.delete("Pod", "ns", "b-0"),  # ran 11:50 -> 12:02
        lambda: [cache.apply(o) for o in placed_on("n3", "c", "2026-01-05T12:03:30Z")],  # its node comes later
        lambda: cache.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n3", "labels": {}},
                             "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}),
        lambda: None,
    ]
    for minute, step in enumerate(steps):
        step()
        walked = {task.uid for node in cache.nodes.values() for task in node.tasks.values()  # as the session opens
                  if task.job_uid in cache.scheduling_jobs() and task.status in OCCUPYING}
        run_cycle(cache, conf(), now=T0 + minute * MINUTE)
        memory = cache.plugin_memory[("reservation", "memory")]
        kept = {uid: start for seen in memory.placed.values() for uid, (_, start) in seen.starts.items()}
        assert set(kept) == walked, minute
    assert sorted(memory.history.runtimes["default"]) == [11 * 60.0, 12 * 60.0]
    assert kept["ns/c-0"] == datetime(2026, 1, 5, 12, 3, 30, tzinfo=timezone.utc).timestamp()


def case_pod(name: str) -> dict:
    return next(o for o in objects_of(CASE) if o["kind"] == "Pod" and o["metadata"]["name"] == name)


def placed_on(node: str, group: str, scheduled: str) -> list[dict]:
    """A running job of one pod on `node`: its PodGroup, then its pod."""
    return objects_of({"podgroups": {f"ns/{group}": {"minMember": 1, "queue": "default", "phase": "Running"}},
                       "pods": {f"ns/{group}-0": {"group": group, "cpu": 1, "node": node, "scheduled": scheduled}}})
