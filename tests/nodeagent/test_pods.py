"""Pods of the node: QoS levels by annotation and Kubernetes QoS class, tolerant parsing, the
API-server LIST + WATCH source on a real kube-apiserver (the agent's own token; cut watches
and an expired version injected by the fault proxy)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeagent.pods import kube_qos_class, pods_from_pod_list
from nodeagent.podwatch import WatchPodSource
from tests.builders import listed_pod
from tests.nodeagent.realnode import agent_token, bound_pod
from tests.waiting import eventually


@pytest.mark.parametrize("qos_class, annotation, default, level", [
    pytest.param("BestEffort", None, "", "BE", id="besteffort-is-offline"),
    pytest.param("Burstable", None, "", "LS", id="burstable-is-online"),
    pytest.param("Guaranteed", None, "", "LS", id="guaranteed-is-online"),
    pytest.param("Burstable", "BE", "", "BE", id="annotation-wins"),
    pytest.param("BestEffort", "LC", "", "LC", id="annotation-wins-online"),
    pytest.param("BestEffort", "GOLD", "", "BE", id="bad-annotation-falls-back-to-class"),
    pytest.param("BestEffort", None, "LS", "LS", id="configured-default-for-all-unannotated"),
])
def test_qos_level(qos_class: str, annotation: str | None, default: str, level: str) -> None:
    [info] = pods_from_pod_list({"items": [listed_pod("p", qos_class=qos_class, level=annotation)]}, default)
    assert (info.qos_level, info.online) == (level, level != "BE")


@pytest.mark.parametrize("containers, qos_class", [
    pytest.param([{}], "BestEffort", id="nothing-asked"),
    pytest.param([{"resources": {"requests": {"cpu": "1"}}}], "Burstable", id="requests-only"),
    pytest.param([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}], "Guaranteed", id="limits-imply-requests"),
    pytest.param([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}],
                 "Burstable", id="request-below-limit"),
])
def test_qos_class_when_status_lacks_it(containers: list, qos_class: str) -> None:
    assert kube_qos_class({"containers": containers}) == qos_class
    [info] = pods_from_pod_list({"items": [listed_pod("p", qos_class=None, containers=containers)]})
    assert info.qos_class == qos_class


def test_one_malformed_pod_does_not_hide_the_others() -> None:
    items = [listed_pod("ok"), listed_pod("bad-priority", priority="high"), {"metadata": "nonsense"}, "junk",
             listed_pod("huge-cpuset"), listed_pod("done", phase="Succeeded"),
             listed_pod("bad-request", containers=[{"resources": {"requests": {"cpu": "lots", "memory": "1Gi"}}}])]
    items[4]["metadata"]["annotations"]["caldera.sh/cpuset"] = "0-3," * 1000
    pods = {p.name: p for p in pods_from_pod_list({"items": items})}
    assert set(pods) == {"ok", "bad-priority", "huge-cpuset", "bad-request"}
    assert pods["bad-priority"].priority == 0 and pods["huge-cpuset"].cpuset == ""
    assert pods["bad-request"].memory_request_bytes == 1 << 30 and pods["bad-request"].cpu_request_cores == 0


# --- the LIST + WATCH source on a real kube-apiserver (faults from tests/kube/faultproxy.py) ---


@pytest.fixture
def watched(real, tmp_path: Path) -> Iterator[tuple[Any, str, WatchPodSource]]:
    """A node with pod "a" running on it, and the agent's watch of it: its own node-bound
    token, through the fault proxy, watches ended after 1-2 s (as timeoutSeconds ends them)."""
    node = f"{real.namespace}-n1"  # cluster-scoped: unique to the test
    real.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    bound_pod(real, "a", node, status={"phase": "Running"})
    token = agent_token(real, node, tmp_path / "token")
    source = WatchPodSource(real.proxy.url, node, token, real.real.ca, min_watch_s=1)
    try:
        yield real, node, source
    finally:
        source.close()


def names(source: WatchPodSource) -> list[str] | None:
    """The pods' names once the source is in sync; None while it is not."""
    try:
        return [p.name for p in source.pods()]
    except RuntimeError:
        return None


def test_watch_follows_events_from_the_listed_version(watched) -> None:
    real, node, source = watched
    with pytest.raises(RuntimeError, match="not in sync"):
        source.pods()  # starts the watch; not listed yet
    eventually(lambda: names(source) == ["a"], what="the listed pod")
    bound_pod(real, "b", node, status={"phase": "Running"})
    real.admin.merge_patch(real.url("v1", "Pod", "a") + "/status", {"status": {"phase": "Succeeded"}})
    eventually(lambda: names(source) == ["b"], what="b added, a finished")
    # each watch ends within 2 s; the next resumes from the last version seen, never a LIST
    eventually(lambda: real.proxy.count("watch", "pods") >= 3, what="three watches", timeout=20)
    assert real.proxy.count("list", "pods") == 1 and source.requests["list"] == 1
    assert not real.proxy.forbidden  # its node's pods are the agent's to watch


def test_gone_version_is_the_one_thing_that_relists(watched) -> None:
    real, node, source = watched
    eventually(lambda: names(source) == ["a"], what="the listed pod")
    real.proxy.gone("pods")  # the next watch: an ERROR event with 410, as after compaction
    eventually(lambda: source.requests["list"] == 2, what="a second LIST")
    bound_pod(real, "c", node, status={"phase": "Running"})
    eventually(lambda: names(source) == ["a", "c"] or names(source) == ["c", "a"], what="c seen after the relist")
    assert real.proxy.count("list", "pods") == 2


def test_a_watch_ended_at_once_is_not_a_hot_loop(watched) -> None:
    """Something in the way (a proxy, a load balancer) cuts every watch as it opens."""
    real, node, source = watched
    eventually(lambda: names(source) == ["a"], what="the listed pod")
    cutting = threading.Event()

    def cut() -> None:
        while not cutting.wait(0.01):
            real.proxy.close_watches()

    cutter = threading.Thread(target=cut, daemon=True)
    watches = real.proxy.count("watch", "pods")
    cutter.start()
    try:
        time.sleep(2.0)
    finally:
        cutting.set()
        cutter.join(5)
    assert 1 <= real.proxy.count("watch", "pods") - watches <= 5  # cut, and backed off each time
    assert source.requests["list"] == 1
    bound_pod(real, "d", node, status={"phase": "Running"})  # and the source still follows once let be
    eventually(lambda: "d" in (names(source) or []), what="d seen after the cuts", timeout=30)


def test_unreachable_api_server_is_not_in_sync() -> None:
    source = WatchPodSource("http://127.0.0.1:1", "node-1", None, None, min_watch_s=1)
    try:
        with pytest.raises(RuntimeError):
            source.pods()
        time.sleep(0.2)
        with pytest.raises(RuntimeError, match="not in sync"):
            source.pods()
    finally:
        source.close()


@pytest.mark.parametrize("containers, cpu_limit, memory_limit, cpu_request", [
    pytest.param([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                  {"resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}], 1.5, 2 << 30, 0.0, id="summed"),
    pytest.param([{"resources": {"limits": {"cpu": "1"}}}, {}], None, None, 0.0, id="one-unlimited-container"),
    pytest.param([{"resources": {"requests": {"kubernetes.io/batch-cpu": "2000",
                                              "kubernetes.io/batch-memory": "1Gi"}}}], None, None, 2.0,
                 id="batch-requests"),
])
def test_limits_and_batch_requests(containers, cpu_limit, memory_limit, cpu_request) -> None:
    [info] = pods_from_pod_list({"items": [listed_pod("p", qos_class="Burstable", containers=containers)]})
    assert (info.cpu_limit_cores, info.memory_limit_bytes, info.cpu_request_cores) == (cpu_limit, memory_limit,
                                                                                       cpu_request)
