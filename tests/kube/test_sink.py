"""The scheduler's decisions reaching the API: binds, retries, evictions, status writes, Events."""

from __future__ import annotations

import itertools
import threading

import pytest

from central.kube.client import VOLCANO_SCHEDULING, path
from central.model.cache import ClusterCache
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod, podgroup
from tests.kube.fakes import RecordingCache, first_fit_cycle, result
from tests.waiting import eventually


def start(kube, cycle=first_fit_cycle, cache=None, **kw) -> tuple[Scheduler, threading.Event, threading.Thread]:
    kw.setdefault("bind_backoff", (0.01, 0.05))
    scheduler = Scheduler(kube, cache if cache is not None else RecordingCache(), cycle, ConfigFile(None, None, None), period=0.05, **kw)
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    return scheduler, stop, thread


def bound_to(real, name: str) -> str | None:
    obj = real.pod(name)
    return obj["spec"].get("nodeName") if obj else None


def binds(real) -> int:
    return real.proxy.count("create", "pods/binding")


def queues(real) -> dict[str, dict]:
    return {q["metadata"]["name"]: q for q in real.admin.get(path(VOLCANO_SCHEDULING, "queues"))["items"]}


@pytest.mark.parametrize("fault", [
    pytest.param("fail", id="bind-refused"),
    pytest.param("fail_after", id="bind-done-but-reply-lost"),
])
def test_failed_bind_is_retried_and_never_doubled(real, fault):
    real.put(node("n1", pods=10))
    real.put(pod("a"))
    real.proxy.fail("create", "pods/binding", times=1, code=503, after=fault == "fail_after")
    scheduler, stop, thread = start(real.kube)
    try:
        eventually(lambda: bound_to(real, "a"), what="pod a bound")
        eventually(lambda: not scheduler.cache.binding, what="the bind in flight to end")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    # refused: one failed call and one good one; reply lost: the read-back shows it bound
    assert binds(real) == (2 if fault == "fail" else 1)
    assert scheduler.sink.counts["bind_failed"] == 1
    assert bound_to(real, "a") == "n1"


def test_failed_bind_releases_the_node_for_the_next_pod(real):
    real.put(node("n1", pods=1))
    real.put(pod("a"))
    real.proxy.fail("create", "pods/binding", times=3, code=500)
    scheduler, stop, thread = start(real.kube)
    try:
        eventually(lambda: bound_to(real, "a"), what="pod a bound after three refusals")
    finally:
        stop.set()
        thread.join(10)
    assert binds(real) == 4
    conditions = {c["type"]: c["status"] for c in real.pod("a")["status"]["conditions"]}
    assert conditions["PodScheduled"] == "True"  # set by the successful Binding
    assert real.proxy.count("patch", "pods/status") >= 1  # the SchedulerError condition written in between
    events = real.events("FailedScheduling")
    assert events and events[0]["involvedObject"]["name"] == "a"
    assert events[0]["count"] >= 1


def test_only_our_pods_are_bound(real):
    real.put(node("n1", pods=10))
    real.put(pod("ours"))
    real.put(pod("theirs", scheduler="default-scheduler"))
    scheduler, stop, thread = start(real.kube)
    try:
        eventually(lambda: bound_to(real, "ours"), what="our pod bound")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    assert bound_to(real, "theirs") is None


def test_builtin_queues_created_when_missing(real):
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
             "spec": {"weight": 3}})
    scheduler, stop, thread = start(real.kube)
    try:
        eventually(scheduler.ready.is_set, what="ready")
    finally:
        stop.set()
        thread.join(10)
    assert set(queues(real)) == {"root", "default"}
    assert queues(real)["default"]["spec"]["weight"] == 3  # an existing queue is left alone


def test_a_refused_builtin_queue_is_retried_until_it_exists(real):
    real.proxy.fail("create", "queues", times=3, code=400)  # the admission webhook refuses, then serves
    scheduler, stop, thread = start(real.kube, queue_backoff=(0.01, 0.02))
    try:
        eventually(lambda: set(queues(real)) == {"root", "default"},
                   what="both queues despite three refusals")
    finally:
        stop.set()
        thread.join(10)
    assert real.proxy.count("create", "queues") >= 5  # three refused, then one each
    assert scheduler.cycles > 0  # scheduling did not wait for them


def team(real) -> dict:
    return real.get("scheduling.volcano.sh/v1beta1", "Queue", "team")


UNSCHEDULABLE = {"phase": "Pending", "conditions": [
    {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
     "message": "2/2 tasks in gang unschedulable: 2 Insufficient cpu"}]}


def test_status_write_conflict_rereads_and_retries(real):
    real.put(podgroup("pg", "default", min_member=2))
    real.put(pod("p1", group="pg"))
    scheduler = Scheduler(real.kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None))
    for reflector in scheduler.reflectors.values():
        reflector.start()
    try:
        eventually(scheduler.synced, what="sync")
        stale = scheduler.reflectors["PodGroup"].objects[f"{real.namespace}/pg"]
        real.kube.merge_patch(path(VOLCANO_SCHEDULING, "podgroups", real.namespace, "pg"),
                              {"metadata": {"labels": {"x": "1"}}})
        eventually(lambda: scheduler.reflectors["PodGroup"].objects[f"{real.namespace}/pg"] is not stale,
                   what="the change")
        scheduler.reflectors["PodGroup"].objects[f"{real.namespace}/pg"] = stale  # as if the watch lagged behind
        scheduler.sink.update_podgroup_status(f"{real.namespace}/pg", UNSCHEDULABLE)
        scheduler.sink.flush()
    finally:
        for reflector in scheduler.reflectors.values():
            reflector.stop()
        scheduler.sink.close()
    stored = real.get("scheduling.volcano.sh/v1beta1", "PodGroup", "pg")
    assert stored["status"] == UNSCHEDULABLE
    assert stored["metadata"]["labels"] == {"x": "1"}  # the other writer's change survives
    assert scheduler.sink.counts["conflict"] == 1
    assert real.proxy.count("update", "podgroups") == 2  # the object itself: Volcano's CRD has no /status


def test_a_status_written_again_before_the_watch_shows_the_last_write_is_not_refused(real):
    """Cycles come faster than the watch shows a write: the next write of that PodGroup starts
    from the object the last one returned, not from the watch's copy that the API server would
    refuse (409) and the sink then read back."""
    real.put(podgroup("pg", "default", min_member=2))
    scheduler = Scheduler(real.kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None))
    for reflector in scheduler.reflectors.values():
        reflector.start()
    try:
        eventually(scheduler.synced, what="sync")
        scheduler.reflectors["PodGroup"].stop()  # the watch shows neither write
        for status in (UNSCHEDULABLE, {"phase": "Inqueue"}, {"phase": "Running"}):
            scheduler.sink.update_podgroup_status(f"{real.namespace}/pg", status)
            scheduler.sink.flush()
            scheduler.sink.drain()
    finally:
        for kind, reflector in scheduler.reflectors.items():
            if kind != "PodGroup":  # stopped above
                reflector.stop()
        scheduler.sink.close()
    assert real.get("scheduling.volcano.sh/v1beta1", "PodGroup", "pg")["status"]["phase"] == "Running"
    assert scheduler.sink.counts["conflict"] == 0
    assert real.proxy.count("update", "podgroups") == 3


def test_status_writes_hold_up_neither_binds_nor_the_loop(real):
    """PodGroup status writes held at the proxy (a slow apiserver): cycles go on, a new pod
    binds meanwhile, and once they go through each PodGroup holds the newest status, written
    a few times, not once per cycle."""
    real.put(node("n1", pods=10))
    groups = [f"pg{i}" for i in range(3)]
    for name in groups:
        real.put(podgroup(name, "default", min_member=2))
    handed: dict[str, dict] = {}
    count = iter(range(1, 1_000_000))

    def cycle(cache, conf, sink):
        out = first_fit_cycle(cache, conf, sink)
        n = next(count)
        for key in cache.of("PodGroup"):  # a status that changes every cycle
            if not key.startswith(f"{real.namespace}/"):
                continue  # another test's, on its way out
            handed[key] = {"phase": "Inqueue", "running": n}
            sink.update_podgroup_status(key, handed[key])
        return out

    real.proxy.hold("update", "podgroups")
    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: real.proxy.held("update", "podgroups") == len(groups), what="every status write held")
        cycles = scheduler.cycles
        real.put(pod("late"))
        eventually(lambda: bound_to(real, "late"), what="the new pod bound while the status writes are held")
        eventually(lambda: scheduler.cycles >= cycles + 5, what="cycles going on while the status writes are held")
        assert real.proxy.held("update", "podgroups") == len(groups)
    finally:
        real.proxy.release()
        stop.set()
        thread.join(40)  # stopping drains the status lane
    for key, status in handed.items():
        stored = real.get("scheduling.volcano.sh/v1beta1", "PodGroup", key.split("/")[1])
        assert stored["status"] == status
    writes = real.proxy.count("update", "podgroups") - scheduler.sink.counts["conflict"]
    assert writes <= 2 * len(groups)  # the held one and the newest, per PodGroup


def test_a_gangs_pod_counts_are_not_written_every_cycle(real):
    """A PodGroup whose condition's message alone changes each cycle (a gang's pods counted
    while they are made) is written once, then the newest message when the scheduler stops."""
    real.put(podgroup("pg", "default", min_member=100))
    count = iter(range(1, 1_000_000))
    last: dict[str, str] = {}

    def cycle(cache, conf, sink):
        out = first_fit_cycle(cache, conf, sink)
        key = f"{real.namespace}/pg"
        if key in cache.of("PodGroup"):
            last["message"] = f"Not enough valid tasks for gang-scheduling, valid: {next(count)}, min: 100"
            sink.update_podgroup_status(key, {"phase": "Pending", "conditions": [
                {"type": "Unschedulable", "status": "True", "reason": "NotEnoughTasks", "message": last["message"]}]})
        return out

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: real.proxy.count("update", "podgroups", real.namespace) >= 1, what="the first status")
        cycles = scheduler.cycles
        eventually(lambda: scheduler.cycles >= cycles + 10, what="ten more cycles")
        assert real.proxy.count("update", "podgroups", real.namespace) - scheduler.sink.counts["conflict"] == 1
    finally:
        stop.set()
        thread.join(40)  # stopping hands over what was held
    stored = real.get("scheduling.volcano.sh/v1beta1", "PodGroup", "pg")["status"]["conditions"]
    assert [c["message"] for c in stored] == [last["message"]]
    assert real.proxy.count("update", "podgroups", real.namespace) - scheduler.sink.counts["conflict"] == 2


def test_pending_pods_get_one_event_not_one_per_cycle(real):
    real.put(node("n1", pods=0))
    real.put(pod("a"))
    scheduler, stop, thread = start(real.kube)
    try:
        eventually(lambda: scheduler.cycles >= 5, what="five cycles")
        eventually(real.events, what="the event")
    finally:
        stop.set()
        thread.join(10)
    [event] = real.events()
    assert (event["involvedObject"]["name"], event["reason"], event["count"]) == ("a", "FailedScheduling", 1)
    assert event["message"] == "0/1 nodes are available: 1 Too many pods."
    assert real.proxy.count("create", "events") == 1


def test_unchanged_status_is_not_written_again(real):
    real.put(podgroup("pg", "default", min_member=2))

    def cycle(cache, conf, sink):
        sink.update_podgroup_status(f"{real.namespace}/pg", {"phase": "Inqueue"})
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: scheduler.cycles >= 5, what="five cycles")
    finally:
        stop.set()
        thread.join(10)
    assert real.get("scheduling.volcano.sh/v1beta1", "PodGroup", "pg")["status"] == {"phase": "Inqueue"}
    assert real.proxy.count("update", "podgroups") == 1


@pytest.mark.parametrize("refusals", [
    pytest.param(0, id="evicted"),
    pytest.param(1, id="disruption-budget-429-then-evicted"),
])
def test_evict_goes_through_the_eviction_api(real, refusals):
    real.put(node("n1", pods=10))
    victim = pod("victim")
    victim["spec"]["nodeName"] = "n1"
    victim["spec"]["terminationGracePeriodSeconds"] = 0  # no kubelet here to end it gracefully
    real.put(victim)
    # a PodDisruptionBudget says not now (the e2e suite has a real one refuse)
    real.proxy.fail("create", "pods/eviction", times=refusals, code=429, reason="TooManyRequests")
    done = []

    def cycle(cache, conf, sink):
        if f"{real.namespace}/victim" in cache.of("Pod") and len(done) <= refusals:  # the core decides again next cycle
            sink.evict(f"{real.namespace}/victim", "reclaim")
            done.append(1)
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: real.pod("victim") is None, what="the victim gone")
        scheduler.sink.drain()
        # the deletion reaches the cache by the watch, a moment after the API has it
        eventually(lambda: not scheduler.feeder.cache.of("Pod"), what="the victim gone from the cache")
    finally:
        stop.set()
        thread.join(10)
    assert real.proxy.count("create", "pods/eviction") == refusals + 1
    assert scheduler.sink.counts["evict_refused"] == refusals  # "not now", not an error
    assert scheduler.sink.counts["evict_failed"] == 0


def test_queue_status_write_keeps_the_controllers_state(real):
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
             "spec": {"weight": 1}, "status": {"state": "Closed"}})

    def cycle(cache, conf, sink):
        sink.update_queue_status("team", {"allocated": {"cpu": "2"}, "running": 1})
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: (team(real).get("status") or {}).get("allocated"), what="the write")
    finally:
        stop.set()
        thread.join(10)
    # allocated is the scheduler's; state and counts stay the Queue controller's
    assert team(real)["status"] == {"state": "Closed", "allocated": {"cpu": "2"}}


def test_a_queues_status_is_written_at_most_once_a_period_the_newest_last(real):
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
              "spec": {"weight": 1}})
    calls = itertools.count(1)

    def cycle(cache, conf, sink):  # a new figure every cycle, as binds brought forward would give
        sink.update_queue_status("team", {"allocated": {"cpu": str(next(calls))}})
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)  # a cycle every 0.05 s
    try:
        eventually(lambda: scheduler.cycles >= 30, what="30 cycles")
    finally:
        stop.set()
        thread.join(10)
    assert 1 <= real.proxy.count("patch", "queues/status") <= 4  # once a second, not 30 times
    assert team(real)["status"]["allocated"] == {"cpu": str(scheduler.cycles)}  # the held-back newest, at close


def test_queue_annotations_are_written_and_read_back_by_the_next_scheduler(real):
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team",
              "annotations": {"owner": "ml"}}, "spec": {"weight": 1}})
    record = '{"lastUpdate":"2026-01-05T01:00:00Z","usage":{"team-a":14400000.0}}'

    def cycle(cache, conf, sink):
        sink.annotate_queue("team", {"caldera.sh/fairshare-usage": record})
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: scheduler.cycles >= 3 and "caldera.sh/fairshare-usage" in team(real)["metadata"]["annotations"],
                   what="the write")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    assert team(real)["metadata"]["annotations"] == {"owner": "ml", "caldera.sh/fairshare-usage": record}
    assert real.proxy.count("patch", "queues") == 1  # the same value is not written again

    cache = ClusterCache()  # a new scheduler finds the record on the Queue, where the plugins read it
    restarted, stop, thread = start(real.kube, cycle=lambda cache, conf, sink: result(), cache=cache)
    try:
        eventually(lambda: "team" in cache.queues, what="the queue seen")
    finally:
        stop.set()
        thread.join(10)
    assert cache.queues["team"].annotations["caldera.sh/fairshare-usage"] == record


def test_a_failing_cycle_does_not_stop_scheduling(real):
    calls = []

    def cycle(cache, conf, sink):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a plugin bug")
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: scheduler.cycles >= 2, what="cycles after the failure")
    finally:
        stop.set()
        thread.join(10)
    assert scheduler.failed_cycles == 1


def test_annotations_nomination_and_node_resources(real):
    real.put(node("n1", pods=10))
    real.put(pod("a"))
    real.put(pod("preemptor"))
    done = []

    def cycle(cache, conf, sink):
        if not done:
            done.append(1)
            a = cache.of("Pod")[f"{real.namespace}/a"]
            cache.apply(dict(a, spec=dict(a["spec"], nodeName="n1")))
            sink.annotate(f"{real.namespace}/a", {"volcano.sh/gpu-index": "1"})
            sink.bind(f"{real.namespace}/a", "n1")
            sink.nominate(f"{real.namespace}/preemptor", "n1")
            sink.publish_node_resources("n1", {"kubernetes.io/batch-cpu": "3500"})
        return result()

    scheduler, stop, thread = start(real.kube, cycle=cycle)
    try:
        eventually(lambda: bound_to(real, "a"), what="the bind")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    bound = real.pod("a")
    assert bound["metadata"]["annotations"]["volcano.sh/gpu-index"] == "1"
    calls = [c for c in real.proxy.requests if c in (("patch", "pods"), ("create", "pods/binding"))]
    assert calls == [("patch", "pods"), ("create", "pods/binding")]  # annotated before it was bound
    assert real.pod("preemptor")["status"]["nominatedNodeName"] == "n1"
    status = real.get("v1", "Node", "n1")["status"]
    assert status["allocatable"]["kubernetes.io/batch-cpu"] == "3500" and status["allocatable"]["cpu"] == "8"
    assert status["capacity"] == {"kubernetes.io/batch-cpu": "3500"}


def test_bind_is_fenced_by_the_pod_uid(real):
    real.put(node("n1", pods=10))
    real.put(pod("a"))
    scheduler = Scheduler(real.kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None))
    for reflector in scheduler.reflectors.values():
        reflector.start()
    try:
        eventually(scheduler.synced, what="sync")
        decided_on = scheduler.reflectors["Pod"].objects[f"{real.namespace}/a"]
        real.admin.delete(real.url("v1", "Pod", "a"))  # not bound: gone at once
        real.put(pod("a"))  # recreated under the same name before the bind lands
        scheduler.reflectors["Pod"].objects[f"{real.namespace}/a"] = decided_on  # the watch has not caught up
        scheduler.sink.bind(f"{real.namespace}/a", "n1")
        scheduler.sink.drain()
    finally:
        for reflector in scheduler.reflectors.values():
            reflector.stop()
        scheduler.sink.close()
    assert bound_to(real, "a") is None  # the new pod was never decided on: it waits for a cycle
    assert scheduler.sink.counts == dict(scheduler.sink.counts, bind=0, bind_failed=1)


def test_the_scheduler_error_condition_keeps_the_pods_other_conditions(real):
    real.put(node("n1", pods=10))
    gated = pod("a")
    gated["status"] = {"conditions": [{"type": "example.com/gate", "status": "False"}]}  # a readiness gate's
    real.put(gated)
    real.proxy.fail("create", "pods/binding", times=1000, code=500)
    scheduler, stop, thread = start(real.kube)
    try:
        eventually(lambda: real.proxy.count("patch", "pods/status") >= 1,
                   what="the SchedulerError condition")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    conditions = {c["type"]: c for c in real.pod("a")["status"]["conditions"]}
    assert conditions["example.com/gate"]["status"] == "False"  # a strategic merge: merged by type
    assert conditions["PodScheduled"]["reason"] == "SchedulerError"
