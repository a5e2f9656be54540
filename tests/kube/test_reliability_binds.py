"""Binds slower than the scheduling period, and a scheduler restart mid-bind, on a real
kube-apiserver: neither over-commits a node nor binds a pod twice.

Binds are held at a gate, not slept on: the scheduler runs as many cycles as the test wants
while they are in flight, so "a bind slower than the period" is a fact of the run, not a
timing guess (Volcano #1383: the next session saw stale usage and over-committed; Volcano #1417:
a session before every cache synced; Kubernetes #106361: expiring assumptions
double-counted).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.resources.vectors import EPSILON
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod
from tests.waiting import eventually


class GatedBinds:
    """The sink's client, with Bindings held until `gate` opens (every other call passes)."""

    def __init__(self, client: Any, gate: threading.Event):
        self.client, self.gate, self.waiting = client, gate, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def create(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        if url.endswith("/binding"):
            self.waiting += 1
            self.gate.wait(30)
        return self.client.create(url, body)


class Watched:
    """A cycle function that checks, after every cycle, what must always hold."""

    def __init__(self) -> None:
        self.cycles = 0
        self.problems: list[str] = []
        self.scheduler: Scheduler | None = None

    def __call__(self, cache: ClusterCache, conf: Any, sink: Any) -> Any:
        if self.scheduler is not None and not self.scheduler.synced():
            self.problems.append("a session ran before every cache synced")
        result = run_cycle(cache, conf, sink)
        rows = len(cache.node_list)
        t = cache.table
        if not np.all(t.used[:rows] <= t.alloc[:rows] + EPSILON) or np.any(t.pods[:rows] > t.max_pods[:rows]):
            self.problems.append(f"over-committed after cycle {self.cycles}: used {t.used[:rows].tolist()}")
        self.cycles += 1
        return result


def start(kube: Any, watched: Watched, stop: threading.Event, gate: threading.Event | None = None):
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    scheduler = Scheduler(kube, ClusterCache(), watched, conf, period=0.02, bind_backoff=(0.01, 0.05))
    watched.scheduler = scheduler
    if gate is not None:
        scheduler.sink.client = GatedBinds(kube, gate)
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    return scheduler, thread


def bound(real: Any, names: list[str]) -> dict[str, str]:
    pods = {p["metadata"]["name"]: p for p in real.admin.get(real.url("v1", "Pod"))["items"]}
    pods = {n: pods.get(n) for n in names}
    return {n: p["spec"]["nodeName"] for n, p in pods.items() if p and p["spec"].get("nodeName")}


def test_binds_slower_than_the_period_never_over_commit(real):
    kube = real.kube
    real.put(node("n1", pods=6))  # 8 CPUs, 6 pods
    names = [f"p{i}" for i in range(20)]
    for name in names:
        real.put(pod(name))  # 1 CPU each: 6 fit (pod count), 14 must wait
    gate, stop, watched = threading.Event(), threading.Event(), Watched()
    scheduler, thread = start(kube, watched, stop, gate)
    try:
        eventually(lambda: scheduler.sink.client.waiting >= 1, what="a bind in flight")
        held_at = watched.cycles
        eventually(lambda: watched.cycles >= held_at + 10, what="ten cycles while the binds are held")
        assert bound(real, names) == {}  # nothing reached the API yet...
        gate.set()  # ...and now every held bind goes through
        eventually(lambda: len(bound(real, names)) == 6, what="six pods bound")
        settled = watched.cycles
        eventually(lambda: watched.cycles >= settled + 5, what="five more cycles")
        scheduler.sink.drain()
    finally:
        gate.set()
        stop.set()
        thread.join(10)
    assert watched.problems == []
    # none twice, none refused
    assert len(bound(real, names)) == 6 and real.proxy.count("create", "pods/binding", real.namespace) == 6


def test_a_restart_mid_bind_binds_nothing_twice_and_waits_for_sync(real):
    kube = real.kube
    for n in ("n1", "n2"):
        real.put(node(n, pods=4))
    names = [f"p{i}" for i in range(12)]
    for name in names:
        real.put(pod(name))
    gate, stop, first = threading.Event(), threading.Event(), Watched()
    scheduler, thread = start(kube, first, stop, gate)
    eventually(lambda: scheduler.sink.client.waiting >= 3, what="binds in flight")
    stop.set()  # the leader goes away with binds in flight...
    thread.join(10)
    gate.set()  # ...which complete after it stopped, as a bind already sent would
    scheduler.sink.drain()
    before_restart = bound(real, names)
    stop2, second = threading.Event(), Watched()
    successor, thread2 = start(kube, second, stop2)  # a fresh process: an empty cache
    try:
        eventually(lambda: len(bound(real, names)) == 8, what="both nodes full")
        settled = second.cycles
        eventually(lambda: second.cycles >= settled + 5, what="five more cycles")
        successor.sink.drain()
    finally:
        stop2.set()
        thread2.join(10)
    after = bound(real, names)
    assert first.problems == [] and second.problems == []
    assert all(after[n] == node_name for n, node_name in before_restart.items())  # nothing moved
    per_node = {n: sum(1 for v in after.values() if v == n) for n in ("n1", "n2")}
    assert per_node == {"n1": 4, "n2": 4}  # the successor counted the binds its predecessor sent
