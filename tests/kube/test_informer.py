"""List+watch against the real kube-apiserver (through the fault proxy for cut streams and
410 Gone): resume from the last resourceVersion, re-list on 410; and the cache feeder."""

from __future__ import annotations

import threading

from central.framework.conf import DEFAULT_CONF_YAML
from central.kube.client import CORE, path
from central.kube.informer import Reflector
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.feeder import CacheFeeder
from tests.builders import node, pod, podgroup
from tests.kube.fakes import RecordingCache
from tests.waiting import eventually


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


def test_a_bind_in_flight_keeps_its_node_against_stale_updates_until_it_fails():
    cache = ClusterCache()
    feeder = CacheFeeder(cache, "volcano")
    feeder.handler("Node")("ADDED", node("n1", pods=10))
    on_pod = feeder.handler("Pod")
    on_pod("ADDED", pod("a"))
    conf = load_config(DEFAULT_CONF_YAML, "default")
    assert run_cycle(cache, conf).binds == {"default/a": "n1"}
    stale = pod("a")
    stale["metadata"]["labels"] = {"x": "y"}
    on_pod("MODIFIED", stale)  # e.g. a label change seen before the binding
    task = cache.tasks["default/a"]
    assert (task.status, task.node, cache.table.pods[0]) == (TaskStatus.BINDING, "n1", 1)
    assert run_cycle(cache, conf).binds == {}  # not placed a second time
    feeder.bind_failed("default/a", pod("a"))  # the bind failed: the node is released
    task = cache.tasks["default/a"]
    assert (task.status, task.node, cache.table.pods[0]) == (TaskStatus.PENDING, None, 0)


def test_a_bind_in_flight_ends_when_the_pod_shows_bound_or_is_deleted():
    cache = ClusterCache()
    feeder = CacheFeeder(cache, "volcano")
    feeder.handler("Node")("ADDED", node("n1", pods=10))
    on_pod = feeder.handler("Pod")
    for name in ("a", "b"):
        on_pod("ADDED", pod(name))
    assert run_cycle(cache, load_config(DEFAULT_CONF_YAML, "default")).binds == {"default/a": "n1", "default/b": "n1"}
    on_pod("MODIFIED", pod("a", node="n1"))
    on_pod("DELETED", pod("b"))
    on_pod("MODIFIED", pod("a"))  # the record ended: an unbound version is taken as it is
    assert (cache.tasks["default/a"].status, cache.tasks["default/a"].node, cache.table.pods[0]) == (
        TaskStatus.PENDING, None, 0)
    assert "default/b" not in cache.tasks


def test_with_gang_only_the_pod_that_completes_a_gang_brings_a_cycle_forward():
    feeder = CacheFeeder(ClusterCache(), "volcano")
    feeder.handler("PodGroup")("ADDED", podgroup("g", "default", min_member=3))
    on_pod = feeder.handler("Pod")

    def arrives(obj: dict) -> bool:
        feeder.arrived.clear()
        on_pod("ADDED", obj)
        return feeder.arrived.is_set()

    assert arrives(pod("g-0", group="g"))  # until the loop has read a configuration with gang
    feeder.gangs_wait = True
    assert not arrives(pod("g-1", group="g"))  # 2 of 3: no cycle could place them
    assert arrives(pod("g-2", group="g"))  # the gang is complete
    assert arrives(pod("g-3", group="g"))  # beyond minMember
    assert arrives(pod("alone"))  # no PodGroup: a gang of one
    assert not arrives(pod("bound", group="g", node="n1")) and not arrives(pod("bad", cpu="lots"))
    feeder.gangs_wait = False  # a configuration without gang places pods of any job
    feeder.handler("PodGroup")("ADDED", podgroup("h", "default", min_member=2))
    assert arrives(pod("h-0", group="h"))


def test_feeder_ignores_pending_pods_of_other_schedulers_but_counts_bound_ones():
    cache = RecordingCache()
    feeder = CacheFeeder(cache, "volcano")
    on_pod = feeder.handler("Pod")
    on_pod("ADDED", pod("mine"))
    on_pod("ADDED", pod("theirs", scheduler="default-scheduler"))
    bound = pod("bound", scheduler="default-scheduler")
    bound["spec"]["nodeName"] = "n1"
    on_pod("ADDED", bound)
    feeder.handler("Node")("ADDED", node("n1", pods=10))
    assert set(cache.of("Pod")) == {"default/mine", "default/bound"}
    assert set(cache.of("Node")) == {"n1"}


def test_a_pod_whose_bind_failed_backs_off_before_it_is_seen_again():
    now = [100.0]
    cache = RecordingCache()
    feeder = CacheFeeder(cache, "volcano", clock=lambda: now[0])
    on_pod = feeder.handler("Pod")
    on_pod("ADDED", pod("a"))
    feeder.bind_failed("default/a", pod("a"), backoff=2.0)
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
        feeder.bind_failed(f"default/{name}", pod(name), backoff=60.0)
    bound = pod("bound")
    bound["spec"]["nodeName"] = "n2"  # bound after all (the reply had been lost)
    on_pod("MODIFIED", bound)
    on_pod("DELETED", pod("gone"))
    assert feeder.parked == {}
    assert cache.of("Pod")["default/bound"]["spec"]["nodeName"] == "n2"


REGRESSIONS = __import__("pathlib").Path(__file__).resolve().parent.parent / "data" / "regressions" / "manifests"


def _cache_state(cache):
    return (sorted(cache.nodes), sorted(cache.tasks), sorted(cache.jobs), sorted(cache.queues),
            cache.table.alloc[: len(cache.node_list)].tolist(), cache.table.used[: len(cache.node_list)].tolist(),
            cache.table.max_pods[: len(cache.node_list)].tolist())


def test_unreadable_objects_are_refused_whole_logged_and_marked():
    """Quantities the cache cannot hold (2^64 pods, 1e999999999 CPUs, NaN) arriving through the
    informer leave the cache exactly as it was: no node half-inserted, the reason kept."""
    import yaml

    from central.model.cache import ClusterCache

    cache = ClusterCache()
    told = []
    feeder = CacheFeeder(cache, "volcano", on_refused=lambda obj, why: told.append((obj["metadata"]["name"], why)))
    feeder.handler("Node")("ADDED", {"kind": "Node", "metadata": {"name": "good"},
                                     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}}})
    before = _cache_state(cache)
    refused = 0
    for sample in sorted(REGRESSIONS.glob("*.yaml")):
        if sample.stem.startswith(("alias-", "deep-")):
            continue  # YAML-only shapes: an API object is JSON
        try:
            docs = list(yaml.safe_load_all(sample.read_bytes()))
        except (yaml.YAMLError, RecursionError):
            continue  # not an object at all: the reader refuses the file
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") in ("Node", "Pod", "Queue", "PodGroup"):
                refused += 1
                feeder.handler(doc["kind"])("ADDED", doc)
                assert _cache_state(cache) == before, sample.name
                assert told[-1][1] == feeder.refused[f"{doc['kind']} {'ns/' if doc['kind'] == 'Pod' else ''}"
                                                     f"{doc['metadata']['name']}"]
                feeder.handler(doc["kind"])("MODIFIED", doc)  # a resync: told once, not again
    assert refused >= 8 and len(told) <= refused and set(feeder.refused) == {"Node n2", "Pod ns/p", "Queue q"}
    assert feeder.refused["Node n2"].startswith("status.allocatable.")
    assert "too large" in feeder.refused["Pod ns/p"] or "finite" in feeder.refused["Pod ns/p"]
    feeder.handler("Node")("DELETED", {"kind": "Node", "metadata": {"name": "n2"}})
    assert "Node n2" not in feeder.refused
