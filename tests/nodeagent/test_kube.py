"""KubeApi against a small HTTP stand-in for the API server (real sockets, real JSON)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from nodeagent.kube import KubeApi


class ApiStandIn(BaseHTTPRequestHandler):
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
        self._reply(200, self.node)

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
    thread = threading.Thread(target=server.serve_forever, daemon=True)
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
