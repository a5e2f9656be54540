"""The client's rate limiter, error mapping, request targets and auth headers."""

from __future__ import annotations

import pytest

from central.kube.client import CORE, ApiError, RateLimiter, path


def test_rate_limiter_allows_a_burst_then_spaces_requests():
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))
        now[0] += seconds

    limiter = RateLimiter(qps=10, burst=3, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        limiter.acquire()
    assert slept == [0.1, 0.1]  # three at once, then one every 1/qps seconds
    now[0] += 10  # idle: the bucket refills up to the burst, no more
    for _ in range(4):
        limiter.acquire()
    assert slept == [0.1, 0.1, 0.1]


def test_errors_carry_the_status_code_reason_and_message(real):
    url = path(CORE, "pods", real.namespace, "x")
    with pytest.raises(ApiError) as err:
        real.kube.get(url)
    assert (err.value.code, err.value.reason, err.value.message) == (404, "NotFound", 'pods "x" not found')
    real.proxy.fail("get", "pods", times=1, code=503, reason="ServiceUnavailable")
    with pytest.raises(ApiError) as err:
        real.kube.get(url)
    assert (err.value.code, err.value.reason) == (503, "ServiceUnavailable")
    assert real.kube.get_or_none(url) is None


def test_a_fork_shares_the_connection_but_not_the_rate_limit(real):
    kube = real.kube
    lease_client = kube.fork()
    assert lease_client.api is kube.api
    kube.limiter._tokens = -1000.0  # binds have queued far ahead on the main client...
    lease_client.limiter.sleep = lambda seconds: pytest.fail(f"the fork waited {seconds}s")
    lease_client.limiter.acquire()  # ...and the Lease call does not wait behind them


def test_no_answer_at_all_is_an_api_error_with_code_zero(tmp_path):
    """A refused connection (an apiserver restarting) must reach callers as ApiError, which
    every worker handles, not as a urllib3 exception that would end the worker."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    config = tmp_path / "kubeconfig"
    config.write_text(f"""apiVersion: v1
kind: Config
current-context: c
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
""")
    from central.kube.client import KubeClient
    client = KubeClient.connect(str(config))
    with pytest.raises(ApiError) as err:
        client.request("GET", "/api/v1/pods", timeout=2.0)
    assert err.value.code == 0


@pytest.fixture
def recording_server():
    """A local HTTP server answering `{}` to every GET, recording (path, Authorization)."""
    import http.server
    import threading

    seen: list[tuple[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append((self.path, self.headers.get("Authorization", "")))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_a_request_keeps_the_servers_path_and_encodes_its_query(recording_server):
    from kubernetes import client

    from central.kube.client import KubeClient
    port, seen = recording_server
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}/k8s/clusters/c1/")
    configuration.api_key, configuration.api_key_prefix = {"BearerToken": "one"}, {"BearerToken": "Bearer"}
    KubeClient(client.ApiClient(configuration)).request(
        "GET", "/api/v1/pods", query={"labelSelector": "a in (x,y)", "watch": True, "limit": 5, "continue": None})
    assert seen == [("/k8s/clusters/c1/api/v1/pods?labelSelector=a%20in%20%28x%2Cy%29&watch=true&limit=5", "Bearer one")]


def test_the_auth_hooks_are_asked_again_only_after_a_while(recording_server):
    import time

    from kubernetes import client

    from central.kube.client import AUTH_REUSE, KubeClient
    port, seen = recording_server
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    configuration.api_key, configuration.api_key_prefix = {"BearerToken": "one"}, {"BearerToken": "Bearer"}
    asked: list[str] = []
    configuration.refresh_api_key_hook = lambda conf: asked.append(conf.api_key["BearerToken"])
    kube = KubeClient(client.ApiClient(configuration))
    for _ in range(3):
        kube.request("GET", "/api/v1/pods")
    configuration.api_key["BearerToken"] = "two"  # the token rotated
    kube.request("GET", "/api/v1/pods")  # within AUTH_REUSE: the headers kept
    assert asked == ["one"]  # once for four requests: the hooks cost more than a bind
    time.sleep(AUTH_REUSE + 0.1)
    kube.request("GET", "/api/v1/pods")
    assert [auth for _, auth in seen] == ["Bearer one"] * 4 + ["Bearer two"] and asked == ["one", "two"]
