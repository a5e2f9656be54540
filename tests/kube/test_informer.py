"""List+watch against the real kube-apiserver (through the fault proxy for cut streams and
410 Gone): resume from the last resourceVersion, re-list on 410; and the cache feeder."""

from __future__ import annotations

import threading

from central.kube.client import CORE, path
from central.kube.feeder import CacheFeeder
from central.kube.informer import Reflector
from tests.kube.conftest import eventually
from tests.kube.fakes import RecordingCache, node, pod


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, obj: dict) -> None:
        with self.lock:
            self.events.append((kind, obj["metadata"]["name"]))

    def names(self, kind: str) -> list[str]:
        with self.lock:
            return [name for k, name in self.events if k == kind]


def test_lists_then_watches_and_resumes_without_replay(real):
    ns = real.namespace
    real.admin.create(path(CORE, "pods", ns), pod("a", ns))
    seen = Recorder()
    reflector = Reflector(real.kube, path(CORE, "pods", ns), seen).start()
    try:
        eventually(lambda: real.proxy.open_watches("pods") == 1, what="the first watch")
        real.proxy.close_watches()  # the stream ends; the reflector must resume
        eventually(lambda: real.proxy.count("watch", "pods") >= 2, what="a second watch")
        real.admin.create(path(CORE, "pods", ns), pod("b", ns))
        eventually(lambda: "b" in seen.names("ADDED"), what="pod b")
        real.admin.delete(path(CORE, "pods", ns, "a"))
        eventually(lambda: "a" in seen.names("DELETED"), what="pod a deleted")
        assert seen.names("ADDED") == ["a", "b"]  # nothing replayed after the reconnect
        assert reflector.relists == 0
        assert set(reflector.objects) == {f"{ns}/b"}
    finally:
        reflector.stop()


def test_gone_resource_version_relists_and_drops_vanished_objects(real):
    ns = real.namespace
    for name in ("a", "b"):
        real.admin.create(path(CORE, "pods", ns), pod(name, ns))
    seen = Recorder()
    reflector = Reflector(real.kube, path(CORE, "pods", ns), seen, backoff=(0.2, 0.5)).start()
    try:
        eventually(lambda: real.proxy.open_watches("pods") == 1, what="the first watch")
        real.proxy.fail("watch", "pods", code=503, times=10_000)  # the reflector backs off...
        real.proxy.close_watches()
        eventually(lambda: real.proxy.count("watch", "pods") >= 2, what="the failed watch")
        real.admin.delete(path(CORE, "pods", ns, "a"))  # ...and misses these changes
        real.admin.create(path(CORE, "pods", ns), pod("c", ns))
        real.proxy.gone("pods")  # its resourceVersion was compacted away meanwhile
        real.proxy.clear_failures()
        eventually(lambda: reflector.relists == 1, what="a re-list after 410 Gone")
        assert set(reflector.objects) == {f"{ns}/b", f"{ns}/c"}
        assert seen.names("DELETED") == ["a"]
        assert seen.names("ADDED") == ["a", "b", "c"]
        real.admin.create(path(CORE, "pods", ns), pod("d", ns))  # and it watches again
        eventually(lambda: "d" in seen.names("ADDED"), what="pod d")
    finally:
        reflector.stop()


def test_field_selector_transition_removes_bound_pod(real):
    ns = real.namespace
    real.admin.create(path(CORE, "pods", ns), pod("a", ns))
    seen = Recorder()
    reflector = Reflector(real.kube, path(CORE, "pods", ns), seen, query={"fieldSelector": "spec.nodeName="}).start()
    try:
        eventually(reflector.synced.is_set, what="sync")
        real.admin.create(path(CORE, "pods", ns, "a", "binding"),
                          {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"},
                           "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})
        eventually(lambda: "a" in seen.names("DELETED"), what="the bound pod leaving the selector")
        assert reflector.objects == {}
    finally:
        reflector.stop()


def test_feeder_keeps_assumed_node_against_stale_updates():
    cache = RecordingCache()
    feeder = CacheFeeder(cache, "volcano")
    on_pod = feeder.handler("Pod")
    on_pod("ADDED", pod("a"))
    feeder.assume("default/a", "n1")
    stale = pod("a")
    stale["metadata"]["labels"] = {"x": "y"}
    on_pod("MODIFIED", stale)  # e.g. a label change seen before the binding
    assert cache.of("Pod")["default/a"]["spec"]["nodeName"] == "n1"
    feeder.forget("default/a", pod("a"))  # the bind failed: the node is released
    assert "nodeName" not in cache.of("Pod")["default/a"]["spec"]
    assert feeder.assumed == {}


def test_feeder_ignores_pending_pods_of_other_schedulers_but_counts_bound_ones():
    cache = RecordingCache()
    feeder = CacheFeeder(cache, "volcano")
    on_pod = feeder.handler("Pod")
    on_pod("ADDED", pod("mine"))
    on_pod("ADDED", pod("theirs", scheduler="default-scheduler"))
    bound = pod("bound", scheduler="default-scheduler")
    bound["spec"]["nodeName"] = "n1"
    on_pod("ADDED", bound)
    feeder.handler("Node")("ADDED", node("n1"))
    assert set(cache.of("Pod")) == {"default/mine", "default/bound"}
    assert set(cache.of("Node")) == {"n1"}


def test_a_pod_whose_bind_failed_backs_off_before_it_is_seen_again():
    now = [100.0]
    cache = RecordingCache()
    feeder = CacheFeeder(cache, "volcano", clock=lambda: now[0])
    on_pod = feeder.handler("Pod")
    on_pod("ADDED", pod("a"))
    feeder.assume("default/a", "n1")
    feeder.forget("default/a", pod("a"), backoff=2.0)
    assert "default/a" not in cache.of("Pod")  # parked: no cycle can place it meanwhile
    relabelled = pod("a")
    relabelled["metadata"]["labels"] = {"v": "2"}
    on_pod("MODIFIED", relabelled)  # updates while parked are kept, not shown
    now[0] += 1.0
    feeder.unpark_due()
    assert "default/a" not in cache.of("Pod")
    now[0] += 1.5
    feeder.unpark_due()
    assert cache.of("Pod")["default/a"]["metadata"]["labels"] == {"v": "2"}


def test_a_parked_pod_that_gets_bound_or_deleted_leaves_the_backoff():
    cache = RecordingCache()
    feeder = CacheFeeder(cache, "volcano")
    on_pod = feeder.handler("Pod")
    for name in ("bound", "gone"):
        feeder.forget(f"default/{name}", pod(name), backoff=60.0)
    bound = pod("bound")
    bound["spec"]["nodeName"] = "n2"  # bound after all (the reply had been lost)
    on_pod("MODIFIED", bound)
    on_pod("DELETED", pod("gone"))
    assert feeder.parked == {}
    assert cache.of("Pod")["default/bound"]["spec"]["nodeName"] == "n2"
