"""The client's rate limiter and error mapping."""

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
