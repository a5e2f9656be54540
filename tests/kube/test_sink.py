"""The scheduler's decisions reaching the API: binds, retries, evictions, status writes, Events."""

from __future__ import annotations

import threading

import pytest

from central.kube.client import VOLCANO_SCHEDULING, path
from central.kube.scheduler import ConfigFile, Scheduler
from tests.kube.conftest import eventually
from tests.kube.fakes import RecordingCache, first_fit_cycle, node, pod, result


def start(kube, cycle=first_fit_cycle, **kw) -> tuple[Scheduler, threading.Event, threading.Thread]:
    kw.setdefault("bind_backoff", (0.01, 0.05))
    scheduler = Scheduler(kube, RecordingCache(), cycle, ConfigFile(None, None, None), period=0.05, **kw)
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    return scheduler, stop, thread


def bound_to(api, name: str) -> str | None:
    obj = api.store.get("pods", "default", name)
    return obj["spec"].get("nodeName") if obj else None


@pytest.mark.parametrize("fault", [
    pytest.param("fail", id="bind-refused"),
    pytest.param("fail_after", id="bind-done-but-reply-lost"),
])
def test_failed_bind_is_retried_and_never_doubled(api, kube, fault):
    api.put(node("n1"))
    api.put(pod("a"))
    getattr(api.store, fault)("bind", "pods", times=1, code=503)
    scheduler, stop, thread = start(kube)
    try:
        eventually(lambda: bound_to(api, "a"), what="pod a bound")
        eventually(lambda: not scheduler.feeder.assumed, what="the assumption to end")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    # refused: one failed call and one good one; reply lost: the read-back shows it bound
    assert api.store.count("bind", "pods") == (2 if fault == "fail" else 1)
    assert scheduler.sink.counts["bind_failed"] == 1
    assert bound_to(api, "a") == "n1"


def test_failed_bind_releases_the_node_for_the_next_pod(api, kube):
    api.put(node("n1", pods=1))
    api.put(pod("a"))
    api.store.fail("bind", "pods", times=3, code=500)
    scheduler, stop, thread = start(kube)
    try:
        eventually(lambda: bound_to(api, "a"), what="pod a bound after three refusals")
    finally:
        stop.set()
        thread.join(10)
    assert api.store.count("bind", "pods") == 4
    conditions = api.store.get("pods", "default", "a")["status"]["conditions"]
    assert {"type": "PodScheduled", "status": "True"} in conditions  # set by the successful Binding
    assert api.store.count("status", "pods") >= 1  # the SchedulerError condition written in between
    events = [e for e in api.store.objects["events"].values() if e["reason"] == "FailedScheduling"]
    assert events and events[0]["involvedObject"]["name"] == "a"
    assert events[0]["count"] >= 1


def test_only_our_pods_are_bound(api, kube):
    api.put(node("n1"))
    api.put(pod("ours"))
    api.put(pod("theirs", scheduler="default-scheduler"))
    scheduler, stop, thread = start(kube)
    try:
        eventually(lambda: bound_to(api, "ours"), what="our pod bound")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    assert bound_to(api, "theirs") is None


def test_builtin_queues_created_when_missing(api, kube):
    api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
             "spec": {"weight": 3}})
    scheduler, stop, thread = start(kube)
    try:
        eventually(scheduler.ready.is_set, what="ready")
    finally:
        stop.set()
        thread.join(10)
    queues = api.store.objects["queues"]
    assert set(name for _, name in queues) == {"root", "default"}
    assert queues[("", "default")]["spec"]["weight"] == 3  # an existing queue is left alone


def test_a_refused_builtin_queue_is_retried_until_it_exists(api, kube):
    api.store.fail("create", "queues", times=3, code=400)  # the admission webhook refuses, then serves
    scheduler, stop, thread = start(kube, queue_backoff=(0.01, 0.02))
    try:
        eventually(lambda: {name for _, name in api.store.objects["queues"]} == {"root", "default"},
                   what="both queues despite three refusals")
    finally:
        stop.set()
        thread.join(10)
    assert api.store.count("create", "queues") >= 5  # three refused, then one each
    assert scheduler.cycles > 0  # scheduling did not wait for them


def podgroup(name: str) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": 2, "queue": "default"}}


UNSCHEDULABLE = {"phase": "Pending", "conditions": [
    {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
     "message": "2/2 tasks in gang unschedulable: 2 Insufficient cpu"}]}


def test_status_write_conflict_rereads_and_retries(api, kube):
    api.put(podgroup("pg"))
    api.put(pod("p1", group="pg"))
    scheduler = Scheduler(kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None))
    for reflector in scheduler.reflectors.values():
        reflector.start()
    try:
        eventually(scheduler.synced, what="sync")
        stale = scheduler.reflectors["PodGroup"].objects["default/pg"]
        kube.merge_patch(path(VOLCANO_SCHEDULING, "podgroups", "default", "pg"), {"metadata": {"labels": {"x": "1"}}})
        eventually(lambda: scheduler.reflectors["PodGroup"].objects["default/pg"] is not stale, what="the change")
        scheduler.reflectors["PodGroup"].objects["default/pg"] = stale  # as if the watch lagged behind
        scheduler.sink.update_podgroup_status("default/pg", UNSCHEDULABLE)
        scheduler.sink.flush()
    finally:
        for reflector in scheduler.reflectors.values():
            reflector.stop()
        scheduler.sink.close()
    stored = api.store.get("podgroups", "default", "pg")
    assert stored["status"] == UNSCHEDULABLE
    assert stored["metadata"]["labels"] == {"x": "1"}  # the other writer's change survives
    assert scheduler.sink.counts["conflict"] == 1
    assert api.store.count("update", "podgroups") == 2  # the object itself: Volcano's CRD has no /status
    eventually(lambda: api.store.objects["events"], what="the Unschedulable event")
    [event] = api.store.objects["events"].values()
    assert (event["involvedObject"]["kind"], event["reason"]) == ("PodGroup", "Unschedulable")


def test_pending_pods_get_one_event_not_one_per_cycle(api, kube):
    api.put(node("n1", pods=0))
    api.put(pod("a"))
    scheduler, stop, thread = start(kube)
    try:
        eventually(lambda: scheduler.cycles >= 5, what="five cycles")
        eventually(lambda: api.store.objects["events"], what="the event")
    finally:
        stop.set()
        thread.join(10)
    [event] = api.store.objects["events"].values()
    assert (event["involvedObject"]["name"], event["reason"], event["count"]) == ("a", "FailedScheduling", 1)
    assert event["message"] == "0/1 nodes are available: 1 Too many pods."
    assert api.store.count("create", "events") == 1


def test_unchanged_status_is_not_written_again(api, kube):
    api.put(podgroup("pg"))

    def cycle(cache, conf, sink):
        sink.update_podgroup_status("default/pg", {"phase": "Inqueue"})
        return result()

    scheduler, stop, thread = start(kube, cycle=cycle)
    try:
        eventually(lambda: scheduler.cycles >= 5, what="five cycles")
    finally:
        stop.set()
        thread.join(10)
    assert api.store.get("podgroups", "default", "pg")["status"] == {"phase": "Inqueue"}
    assert api.store.count("update", "podgroups") == 1


@pytest.mark.parametrize("refusals", [
    pytest.param(0, id="evicted"),
    pytest.param(1, id="disruption-budget-429-then-evicted"),
])
def test_evict_goes_through_the_eviction_api(api, kube, refusals):
    api.put(node("n1"))
    victim = pod("victim")
    victim["spec"]["nodeName"] = "n1"
    api.put(victim)
    api.store.fail("evict", "pods", times=refusals, code=429)  # a PodDisruptionBudget says not now
    done = []

    def cycle(cache, conf, sink):
        if "default/victim" in cache.of("Pod") and len(done) <= refusals:  # the core decides again next cycle
            sink.evict("default/victim", "reclaim")
            done.append(1)
        return result()

    scheduler, stop, thread = start(kube, cycle=cycle)
    try:
        eventually(lambda: api.store.get("pods", "default", "victim") is None, what="the victim gone")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    assert api.store.count("evict", "pods") == refusals + 1
    assert scheduler.sink.counts["evict_refused"] == refusals  # "not now", not an error
    assert scheduler.sink.counts["evict_failed"] == 0
    assert not scheduler.feeder.cache.of("Pod")


def test_queue_status_write_keeps_the_controllers_state(api, kube):
    api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
             "spec": {"weight": 1}, "status": {"state": "Closed"}})

    def cycle(cache, conf, sink):
        sink.update_queue_status("team", {"allocated": {"cpu": "2"}, "running": 1})
        return result()

    scheduler, stop, thread = start(kube, cycle=cycle)
    try:
        eventually(lambda: (api.store.get("queues", "", "team")["status"] or {}).get("allocated"), what="the write")
    finally:
        stop.set()
        thread.join(10)
    # allocated is the scheduler's; state and counts stay the Queue controller's
    assert api.store.get("queues", "", "team")["status"] == {"state": "Closed", "allocated": {"cpu": "2"}}


def test_a_failing_cycle_does_not_stop_scheduling(api, kube):
    calls = []

    def cycle(cache, conf, sink):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a plugin bug")
        return result()

    scheduler, stop, thread = start(kube, cycle=cycle)
    try:
        eventually(lambda: scheduler.cycles >= 2, what="cycles after the failure")
    finally:
        stop.set()
        thread.join(10)
    assert scheduler.failed_cycles == 1


def test_annotations_nomination_and_node_resources(api, kube):
    api.put(node("n1"))
    api.put(pod("a"))
    api.put(pod("preemptor"))
    done = []

    def cycle(cache, conf, sink):
        if not done:
            done.append(1)
            a = cache.of("Pod")["default/a"]
            cache.apply(dict(a, spec=dict(a["spec"], nodeName="n1")))
            sink.annotate("default/a", {"volcano.sh/gpu-index": "1"})
            sink.bind("default/a", "n1")
            sink.nominate("default/preemptor", "n1")
            sink.publish_node_resources("n1", {"kubernetes.io/batch-cpu": "3500"})
        return result()

    scheduler, stop, thread = start(kube, cycle=cycle)
    try:
        eventually(lambda: bound_to(api, "a"), what="the bind")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    bound = api.store.get("pods", "default", "a")
    assert bound["metadata"]["annotations"]["volcano.sh/gpu-index"] == "1"
    verbs = [v for v, r, _ in api.store.requests if r == "pods" and v in ("patch", "bind")]
    assert verbs == ["patch", "bind"]  # annotated before it was bound
    assert api.store.get("pods", "default", "preemptor")["status"]["nominatedNodeName"] == "n1"
    status = api.store.get("nodes", "", "n1")["status"]
    assert status["allocatable"]["kubernetes.io/batch-cpu"] == "3500" and status["allocatable"]["cpu"] == "8"
    assert status["capacity"] == {"kubernetes.io/batch-cpu": "3500"}


def test_bind_is_fenced_by_the_pod_uid(api, kube):
    api.put(node("n1"))
    api.put(pod("a"))
    scheduler = Scheduler(kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None))
    for reflector in scheduler.reflectors.values():
        reflector.start()
    try:
        eventually(scheduler.synced, what="sync")
        decided_on = scheduler.reflectors["Pod"].objects["default/a"]
        with api.store.lock:
            api.store.delete("pods", ("default", "a"))
        api.put(pod("a"))  # recreated under the same name before the bind lands
        scheduler.reflectors["Pod"].objects["default/a"] = decided_on  # the watch has not caught up
        scheduler.sink.bind("default/a", "n1")
        scheduler.sink.drain()
    finally:
        for reflector in scheduler.reflectors.values():
            reflector.stop()
        scheduler.sink.close()
    assert bound_to(api, "a") is None  # the new pod was never decided on: it waits for a cycle
    assert scheduler.sink.counts == dict(scheduler.sink.counts, bind=0, bind_failed=1)


def test_the_scheduler_error_condition_keeps_the_pods_other_conditions(api, kube):
    api.put(node("n1"))
    gated = api.put(pod("a"))
    gated["status"]["conditions"] = [{"type": "example.com/gate", "status": "False"}]  # a readiness gate's
    with api.store.lock:
        api.store.replace("pods", ("default", "a"), gated, None)
    api.store.fail("bind", "pods", times=1000, code=500)
    scheduler, stop, thread = start(kube)
    try:
        eventually(lambda: api.store.count("patch", "pods") + api.store.count("status", "pods") >= 1,
                   what="the SchedulerError condition")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    conditions = {c["type"]: c for c in api.store.get("pods", "default", "a")["status"]["conditions"]}
    assert conditions["example.com/gate"]["status"] == "False"  # a strategic merge: merged by type
    assert conditions["PodScheduled"]["reason"] == "SchedulerError"
