"""KubeApi against a small HTTP stand-in for the API server (real sockets, real JSON)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from nodeagent.kube import KubeApi
from nodeagent.pods import HttpPodSource, PodInfo


class ApiStandIn(BaseHTTPRequestHandler):
    pod_list = {"kind": "PodList", "items": [
        {"metadata": {"namespace": "shop", "name": "web", "uid": "u1",
                      "annotations": {"volcano.sh/qos-level": "LC"}},
         "spec": {"priority": 1000}, "status": {"phase": "Running", "qosClass": "Burstable"}},
        {"metadata": {"namespace": "batch", "name": "job", "uid": "u2"}, "status": {"phase": "Running"}},
        {"metadata": {"namespace": "batch", "name": "odd", "uid": "u3",
                      "annotations": {"volcano.sh/qos-level": "GOLD"}}, "status": {"phase": "Pending"}},
        {"metadata": {"namespace": "batch", "name": "done", "uid": "u4"}, "status": {"phase": "Succeeded"}},
        {"metadata": {"name": "no-uid"}, "status": {"phase": "Running"}},
    ]}
    node = {"metadata": {"name": "n1", "resourceVersion": "7"},
            "spec": {"taints": [{"key": "other", "effect": "NoExecute"}]}}
    requests: list[tuple[str, str, dict, dict]] = []

    def _reply(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        self.requests.append((self.command, self.path, dict(self.headers), body))
        return body

    def do_GET(self) -> None:
        self._record()
        self._reply(200, self.pod_list if self.path.startswith("/api/v1/pods") else self.node)

    def do_POST(self) -> None:
        self._record()
        if "blocked" in self.path:
            self._reply(429, {"kind": "Status", "reason": "TooManyRequests"})
        else:
            self._reply(201, {"kind": "Status", "status": "Success"})

    def do_PATCH(self) -> None:
        body = self._record()
        if body["metadata"]["resourceVersion"] != self.node["metadata"]["resourceVersion"]:
            self._reply(409, {"reason": "Conflict"})
            return
        self.node["spec"]["taints"] = body["spec"]["taints"]
        self._reply(200, self.node)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api(tmp_path: Path) -> Iterator[KubeApi]:
    ApiStandIn.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), ApiStandIn)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    token = tmp_path / "token"
    token.write_text("secret-token\n")
    try:
        yield KubeApi(f"http://127.0.0.1:{server.server_port}", "n1", token_file=token)
    finally:
        server.shutdown()
        server.server_close()


def test_evict_posts_a_policy_v1_eviction(api: KubeApi) -> None:
    api.evict("batch", "job-0")
    method, path, headers, body = ApiStandIn.requests[0]
    assert (method, path) == ("POST", "/api/v1/namespaces/batch/pods/job-0/eviction")
    assert body["apiVersion"] == "policy/v1" and body["kind"] == "Eviction"
    assert headers["Authorization"] == "Bearer secret-token"


def test_refused_eviction_raises_for_the_strategy_to_count(api: KubeApi) -> None:
    with pytest.raises(OSError):
        api.evict("batch", "blocked")


def test_taint_added_then_removed_keeping_other_taints(api: KubeApi) -> None:
    api.set_taint("volcano.sh/offline-job-evicting", "NoSchedule", True)
    assert ApiStandIn.node["spec"]["taints"] == [
        {"key": "other", "effect": "NoExecute"},
        {"key": "volcano.sh/offline-job-evicting", "effect": "NoSchedule"},
    ]
    patch = ApiStandIn.requests[1]
    assert patch[0] == "PATCH" and patch[2]["Content-Type"] == "application/merge-patch+json"
    api.set_taint("volcano.sh/offline-job-evicting", "NoSchedule", False)
    assert ApiStandIn.node["spec"]["taints"] == [{"key": "other", "effect": "NoExecute"}]


def test_pods_from_the_api_server(api: KubeApi, tmp_path: Path) -> None:
    token = tmp_path / "token"
    source = HttpPodSource(f"{api.base_url}/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", token, "BE")
    assert source.pods() == [
        PodInfo("shop", "web", "u1", "Burstable", "LC", 1000),
        PodInfo("batch", "job", "u2", "BestEffort", "BE", 0),  # no annotation: the configured default
        PodInfo("batch", "odd", "u3", "BestEffort", "BE", 0),  # unknown level: the default too
    ]
    assert ApiStandIn.requests[0][1] == "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1"
