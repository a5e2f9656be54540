"""Pods of the node: QoS levels by annotation and Kubernetes QoS class, tolerant parsing, the
API-server LIST + WATCH source against a small in-process HTTP server."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from nodeagent.pods import kube_qos_class, pods_from_pod_list
from nodeagent.podwatch import WatchPodSource


def pod(name: str, qos_class: str | None = "BestEffort", level: str | None = None, phase: str = "Running",
        **spec) -> dict:
    annotations = {} if level is None else {"volcano.sh/qos-level": level}
    status = {"phase": phase, **({"qosClass": qos_class} if qos_class else {})}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "annotations": annotations,
                         "resourceVersion": "1"}, "spec": spec, "status": status}


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
    [info] = pods_from_pod_list({"items": [pod("p", qos_class, annotation)]}, default)
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
    [info] = pods_from_pod_list({"items": [pod("p", None, containers=containers)]})
    assert info.qos_class == qos_class


def test_one_malformed_pod_does_not_hide_the_others() -> None:
    items = [pod("ok"), pod("bad-priority", priority="high"), {"metadata": "nonsense"}, "junk",
             pod("huge-cpuset"), pod("done", phase="Succeeded"),
             pod("bad-request", containers=[{"resources": {"requests": {"cpu": "lots", "memory": "1Gi"}}}])]
    items[4]["metadata"]["annotations"]["caldera.sh/cpuset"] = "0-3," * 1000
    pods = {p.name: p for p in pods_from_pod_list({"items": items})}
    assert set(pods) == {"ok", "bad-priority", "huge-cpuset", "bad-request"}
    assert pods["bad-priority"].priority == 0 and pods["huge-cpuset"].cpuset == ""
    assert pods["bad-request"].memory_request_bytes == 1 << 30 and pods["bad-request"].cpu_request_cores == 0


class FakeApiServer:
    """Serves one node's pods: LIST from a list, WATCH from a queue of events (or a 410)."""

    def __init__(self, watch_s: float = 0.5) -> None:
        self.items = [pod("a")]
        self.events: list[dict | int] = []
        self.calls: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlparse(self.path).query)
                fake.calls.append(query)
                if "watch" not in query:
                    body = json.dumps({"metadata": {"resourceVersion": "10"}, "items": fake.items}).encode()
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if fake.events and fake.events[0] == 410:
                    fake.events.pop(0)
                    self.send_response(410)
                    self.end_headers()
                    return
                self.send_response(200)
                self.end_headers()
                deadline = time.monotonic() + watch_s  # a short watch: the server ends it, as timeoutSeconds does
                while time.monotonic() < deadline:
                    if fake.events and fake.events[0] != 410:
                        self.wfile.write(json.dumps(fake.events.pop(0)).encode() + b"\n")
                        self.wfile.flush()
                    time.sleep(0.01)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def wait_for(check, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
        except RuntimeError:
            pass
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_watch_follows_events_from_the_listed_version() -> None:
    api = FakeApiServer()
    source = WatchPodSource(api.url, "node-1", None, None, min_watch_s=1)
    try:
        with pytest.raises(RuntimeError, match="not in sync"):
            source.pods()  # starts the watch; not listed yet
        assert [p.name for p in wait_for(source.pods)] == ["a"]
        api.events += [{"type": "ADDED", "object": pod("b")},
                       {"type": "MODIFIED", "object": pod("a", phase="Succeeded")},
                       {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}}]
        assert wait_for(lambda: [p.name for p in source.pods()] == ["b"])
        # Each watch ends after 0.5 s (as timeoutSeconds ends it); the next resumes from the bookmark.
        wait_for(lambda: any(c.get("resourceVersion") == ["42"] for c in api.calls[2:]))
        list_call, first_watch, *rest = api.calls
        assert list_call["resourceVersion"] == ["0"] and list_call["fieldSelector"] == ["spec.nodeName=node-1"]
        assert first_watch["resourceVersion"] == ["10"] and first_watch["allowWatchBookmarks"] == ["true"]
        assert all("watch" in c for c in rest) and source.requests["list"] == 1  # never a second LIST
    finally:
        source.close()
        api.stop()


def test_gone_version_is_the_one_thing_that_relists() -> None:
    api = FakeApiServer()
    api.events.append(410)
    source = WatchPodSource(api.url, "node-1", None, None, min_watch_s=1)
    try:
        wait_for(source.pods)
        wait_for(lambda: source.requests["list"] == 2)
        api.items = [pod("c")]
        api.events.append({"type": "ERROR", "object": {"code": 410, "message": "too old"}})
        wait_for(lambda: [p.name for p in source.pods()] == ["c"])
    finally:
        source.close()
        api.stop()


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
    [info] = pods_from_pod_list({"items": [pod("p", "Burstable", containers=containers)]})
    assert (info.cpu_limit_cores, info.memory_limit_bytes, info.cpu_request_cores) == (cpu_limit, memory_limit,
                                                                                       cpu_request)


def test_a_watch_ended_at_once_is_not_a_hot_loop() -> None:
    api = FakeApiServer(watch_s=0.0)  # as a proxy that closes every watch at once
    source = WatchPodSource(api.url, "node-1", None, None, min_watch_s=1)
    try:
        wait_for(source.pods)
        time.sleep(2.0)
        assert source.requests["watch"] <= 5 and source.requests["list"] == 1
    finally:
        source.close()
        api.stop()
