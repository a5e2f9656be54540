"""The real scheduling core behind the adapter: ClusterCache + run_cycle on a real kube-apiserver."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod, podgroup
from tests.waiting import eventually

QUEUE = ("scheduling.volcano.sh/v1beta1", "Queue")
PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")


def gang(real, name: str, size: int, cpu: str) -> list[str]:
    real.put(podgroup(name, "default", min_member=size))
    names = []
    for i in range(size):
        real.put(pod(f"{name}-{i}", group=name, cpu=cpu))
        names.append(f"{name}-{i}")
    return names


def run_scheduler(kube, stop: threading.Event) -> tuple[Scheduler, threading.Thread]:
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    scheduler = Scheduler(kube, ClusterCache(), run_cycle, conf, period=0.05, bind_backoff=(0.01, 0.05))
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    return scheduler, thread


@contextmanager
def running(scheduler: Scheduler) -> Iterator[None]:
    """The scheduler's loop in a thread for the `with` block; stopped and joined after it."""
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def test_gangs_are_bound_whole_or_reported_pending(real):
    for name in ("n1", "n2"):
        real.put(node(name, pods=10))
    fits = gang(real, "small", 3, "2")
    too_big = gang(real, "big", 5, "4")
    real.proxy.fail("create", "pods/binding", times=1, code=500)  # one refused bind on the way
    stop = threading.Event()
    scheduler, thread = run_scheduler(real.kube, stop)
    try:
        eventually(lambda: all(real.pod(n)["spec"].get("nodeName") for n in fits),
                   what="the small gang bound")
        eventually(lambda: (real.get(*PODGROUP, "big").get("status") or {}).get("conditions"),
                   what="the big gang's condition")
        eventually(lambda: any(e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "big-0"
                               for e in real.events()), what="a why-pending event")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    assert not any(real.pod(n)["spec"].get("nodeName") for n in too_big)
    assert real.proxy.count("create", "pods/binding") == len(fits) + 1  # the refused one was retried once
    condition = real.get(*PODGROUP, "big")["status"]["conditions"][0]
    assert condition["type"] == "Unschedulable"
    assert {q["metadata"]["name"] for q in real.admin.get(real.url(*QUEUE))["items"]} == {"root", "default"}


def test_agent_reports_reach_the_cache_and_batch_resources_the_node(real):
    import grpc

    from central.agents.feed import NodeDataFeed
    from central.agents.server import ReceiverServer
    from central.agents.store import NodeReportStore
    from nodeagent.api.v1 import agent_pb2 as pb
    from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

    real.put(node("n1", pods=10))
    store = NodeReportStore()
    receiver = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = receiver.start()
    leading: list[bool] = []
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    scheduler = Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=0.05, node_feed=NodeDataFeed(store),
                          on_leading=leading.append)
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    try:
        report = pb.NodeReport(node_name="n1", agent_epoch="e", sequence=1, full=True,
                               resources=pb.Resources(batch_cpu_millicores=3500, batch_memory_bytes=2 << 30))
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            [ack] = list(pb_grpc.NodeReportServiceStub(channel).Report(iter([report])))
        assert ack.accepted
        eventually(lambda: (real.get("v1", "Node", "n1")["status"].get("capacity") or {}).get(
            "kubernetes.io/batch-cpu") == "3500", what="the batch resources published on the Node")
        assert leading == [True]
    finally:
        stop.set()
        thread.join(10)
        receiver.stop()
    assert leading == [True, False]
    assert real.get("v1", "Node", "n1")["status"]["allocatable"]["kubernetes.io/batch-memory"] == str(2 << 30)


SLA_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: sla}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}]
"""


def test_a_poison_pill_gets_an_event_and_a_count_while_others_bind(real):
    from central.scheduler.metrics import SchedulerMetrics

    real.put(node("n1", pods=10))
    bad = podgroup("bad", "default")
    bad["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": "87600000h"}
    real.put(bad)
    real.put(pod("bad-0", group="bad"))
    good = gang(real, "good", 1, "1")
    metrics = SchedulerMetrics()
    conf = ConfigFile(None, load_config, load_config(SLA_CONF, "sla"))
    scheduler = Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=0.05, metrics=metrics)
    with running(scheduler):
        eventually(lambda: real.pod(good[0])["spec"].get("nodeName"), timeout=30, what="the good pod bound")
        eventually(lambda: real.events("InvalidSchedulingData") and scheduler.cycles >= 3, timeout=30,
                   what="the Warning Event on the bad PodGroup")
    [event] = real.events("InvalidSchedulingData")
    assert event["type"] == "Warning" and event["involvedObject"]["kind"] == "PodGroup"
    # one Event for the one fault (not also an Unschedulable one repeating it), however many cycles ran
    # one Event, its count the cycles that met the fault (client-go's correlator)
    assert [reason for reason, _ in fault_events(real, "bad", event["message"])] == ["InvalidSchedulingData"]
    field = "metadata.annotations[volcano.sh/sla-waiting-time]"
    assert event["message"].startswith(f"PodGroup {real.namespace}/bad: {field}")
    assert not real.pod("bad-0")["spec"].get("nodeName")
    assert metrics.faults.labels("PodGroup", "sla")._value.get() >= 1
    assert scheduler.failed_cycles == 0


def test_a_fault_met_mid_allocate_is_one_event_on_the_podgroup(real):
    """A plugin meets bad data on a pending pod: its PodGroup gets the fault's Event once (not
    also an Unschedulable one repeating it), the pod its FailedScheduling saying why it waits."""
    from central.errors import InputError
    from central.framework.conf import Registry
    from central.scheduler import REGISTRY
    from tests.core.plugins import RefusingPlugin

    class Refusing(RefusingPlugin):
        def predicate(self, task, rows):
            if task.job_uid == f"{real.namespace}/bad":
                raise InputError(f"Pod {task.uid}: metadata.annotations[example.com/x]", "unreadable")
            return []

    registry = Registry(REGISTRY.actions, {**REGISTRY.plugins, "refusing": Refusing})
    real.put(node("n1", pods=10))
    real.put(podgroup("bad", "default"))
    real.put(pod("bad-0", group="bad"))
    conf = ConfigFile(None, load_config, load_config(
        'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: gang}, {name: predicates}, {name: refusing}]',
        "refusing", registry))
    scheduler = Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=0.05)
    with running(scheduler):
        eventually(lambda: real.events("InvalidSchedulingData") and scheduler.cycles >= 3, timeout=30,
                   what="the fault's Event")
    [event] = real.events("InvalidSchedulingData")
    assert event["involvedObject"]["kind"] == "PodGroup"
    # one Event, its count the cycles that met the fault (client-go's correlator)
    assert [reason for reason, _ in fault_events(real, "bad", event["message"])] == ["InvalidSchedulingData"]
    assert {e["reason"] for e in real.events() if e["involvedObject"]["kind"] == "Pod"} == {"FailedScheduling"}


def fault_events(real, podgroup: str, message: str) -> list[tuple[str, int]]:
    """(reason, count) of the PodGroup's Events that carry the fault's message."""
    return [(e["reason"], e.get("count", 1)) for e in real.events()
            if e["involvedObject"]["kind"] == "PodGroup" and e["involvedObject"]["name"] == podgroup
            and e["message"] == message]


def test_a_failed_cycle_is_rolled_back_and_the_next_one_binds_on_a_clean_cache(real, monkeypatch):
    """A bug in the middle of the first cycle (after a gang was committed): nothing of that
    cycle reaches the API or stays in the cache, and the next cycle binds each pod once."""
    from central.plugins.gang import Gang
    from central.scheduler.metrics import SchedulerMetrics

    real.put(node("n1", pods=10))
    first, second = gang(real, "first", 2, "1"), gang(real, "second", 2, "1")
    original, raised = Gang.job_ready, []

    def job_ready_once_broken(self, job):
        if job.name == "second" and not raised:  # the first gang is committed by now
            raised.append(job.uid)
            raise RuntimeError("a plugin bug")
        return original(self, job)

    monkeypatch.setattr(Gang, "job_ready", job_ready_once_broken)
    metrics = SchedulerMetrics()
    stop = threading.Event()
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    scheduler = Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=0.05, bind_backoff=(0.01, 0.05),
                          metrics=metrics)
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(lambda: all(real.pod(n)["spec"].get("nodeName") for n in first + second),
                   what="both gangs bound")
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    assert scheduler.failed_cycles == 1 and metrics.rolled_back._value.get() == 1
    assert real.proxy.count("create", "pods/binding") == 4
    assert scheduler.cache.table.pods[scheduler.cache.nodes["n1"].index] == 4


def scheduler_waiting_a_minute(real, on_arrival: bool) -> Scheduler:
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    return Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=60.0, on_arrival=on_arrival)


def test_a_new_pod_brings_the_next_cycle_forward(real):
    real.put(node("n1", pods=10))
    scheduler = scheduler_waiting_a_minute(real, on_arrival=True)
    with running(scheduler):
        eventually(lambda: scheduler.cycles >= 1, what="the first cycle")
        real.put(pod("late"))
        eventually(lambda: real.pod("late")["spec"].get("nodeName"), timeout=20, what="the new pod bound")
        assert scheduler.cycles == 2  # one cycle for it, not a cycle every 0.1 s
        for i in range(3):  # pods that come while the scheduler waits: as many cycles at most
            real.put(pod(f"more-{i}"))
        eventually(lambda: all(real.pod(f"more-{i}")["spec"].get("nodeName") for i in range(3)), timeout=20,
                   what="the later pods bound")
        assert 3 <= scheduler.cycles <= 5


def test_a_gang_short_of_pods_brings_no_cycle_forward_until_it_is_complete(real):
    real.put(node("n1", pods=10))
    real.put(podgroup("g", "default", min_member=3))
    scheduler = scheduler_waiting_a_minute(real, on_arrival=True)
    with running(scheduler):
        eventually(lambda: scheduler.cycles >= 1, what="the first cycle")
        for i in range(2):
            real.put(pod(f"g-{i}", group="g"))
        eventually(lambda: len(scheduler.cache.tasks) == 2, what="two of the gang's pods in the scheduler's cache")
        time.sleep(1.0)
        assert scheduler.cycles == 1  # no cycle could place them
        real.put(pod("g-2", group="g"))
        eventually(lambda: all(real.pod(f"g-{i}")["spec"].get("nodeName") for i in range(3)), timeout=20,
                   what="the gang bound")
        assert scheduler.cycles == 2


def test_without_cycle_on_arrival_a_new_pod_waits_for_the_period(real):
    real.put(node("n1", pods=10))
    scheduler = scheduler_waiting_a_minute(real, on_arrival=False)
    with running(scheduler):
        eventually(lambda: scheduler.cycles >= 1, what="the first cycle")
        real.put(pod("late"))
        eventually(lambda: "late" in {t.name for j in scheduler.cache.jobs.values() for t in j.tasks.values()},
                   what="the pod in the scheduler's cache")
        time.sleep(1.0)
        assert not real.pod("late")["spec"].get("nodeName") and scheduler.cycles == 1
