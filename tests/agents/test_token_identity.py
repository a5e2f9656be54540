"""Agent identity by projected ServiceAccount token over server-only TLS (real loopback gRPC).

The authenticator is a table here: the real one asks the API server's TokenReview, which the
control-plane tests exercise; `identity_from_review` (the part that decides) is tested below.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import grpc
import pytest

from central.agents import NodeReportStore, ReceiverServer, ServerTls
from central.agents.server import AgentIdentity, Unauthenticated, peer_address
from central.agents.tokenreview import NODE_NAME, TokenReviewer, identity_from_review
from central.certs.issue import ServingRequest, issue_serving, new_ca
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc
from nodeagent.report import sections
from nodeagent.stream import ReportStream, TlsFiles
from tests.agents.reports import snapshot
from tests.waiting import eventually


class Tokens:
    """token -> identity; anything else is refused. Counts calls (the cache is the reviewer's)."""

    def __init__(self, table: dict[str, AgentIdentity]):
        self.table, self.calls = table, 0

    def __call__(self, token: str) -> AgentIdentity:
        self.calls += 1
        if token not in self.table:
            raise Unauthenticated("unknown token")
        return self.table[token]


def _server_tls(tmp_path: Path) -> tuple[ServerTls, TlsFiles]:
    now = dt.datetime.now(dt.timezone.utc)
    ca = new_ca("ca", now)
    pair = issue_serving(ca, ServingRequest("caldera-scheduler", ("localhost",), ("127.0.0.1",)), now)
    for name, data in (("ca.crt", ca.cert_pem), ("tls.crt", pair.cert_pem), ("tls.key", pair.key_pem)):
        (tmp_path / name).write_bytes(data)
    return ServerTls(tmp_path / "tls.crt", tmp_path / "tls.key"), TlsFiles(tmp_path / "ca.crt", server_name="localhost")


def _run(tmp_path, agent_runner, tokens: Tokens, node: str, token: str):
    server_tls, client_tls = _server_tls(tmp_path)
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=server_tls, authenticate=tokens)
    port = server.start()
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    stream = ReportStream(f"127.0.0.1:{port}", node, tls=client_tls, token_file=token_file,
                          backoff_base_s=0.05, backoff_max_s=0.1)
    stream.offer(sections(snapshot(1.0)))
    agent_runner(stream)
    return server, store, stream, token_file


def test_a_token_for_the_node_streams_its_reports(tmp_path, agent_runner):
    server, store, stream, _ = _run(tmp_path, agent_runner, Tokens({"t-a": AgentIdentity("node-a")}), "node-a", "t-a")
    try:
        eventually(lambda: store.latest("node-a") is not None)
        assert server.service.denied == server.service.unauthenticated == 0
    finally:
        server.stop()


def test_a_token_for_another_node_is_denied_logged_once_and_said_by_the_agent(tmp_path, agent_runner,
                                                                               caplog):
    server, store, stream, _ = _run(tmp_path, agent_runner, Tokens({"t-b": AgentIdentity("node-b")}), "node-a", "t-b")
    try:
        eventually(lambda: server.service.denied >= 3 and stream.stats.reconnects >= 3)
        assert store.latest("node-a") is None and stream.stats.acked == 0
        assert stream.stats.refused.startswith("PERMISSION_DENIED: this stream is not entitled to report node")
        agent_warnings = [r for r in caplog.records if r.name == "nodeagent.stream" and r.levelname == "WARNING"]
        assert len(agent_warnings) == 1  # not one per reconnect
    finally:
        server.stop()


def test_an_unknown_token_is_unauthenticated_and_a_fresh_one_is_read_at_reconnect(tmp_path, agent_runner):
    tokens = Tokens({"fresh": AgentIdentity("node-a")})
    server, store, stream, token_file = _run(tmp_path, agent_runner, tokens, "node-a", "stale")
    try:
        eventually(lambda: server.service.unauthenticated >= 2)
        assert store.latest("node-a") is None
        token_file.write_text("fresh")  # the kubelet rotated the projected token
        eventually(lambda: store.latest("node-a") is not None)
    finally:
        server.stop()


def test_a_stream_ends_when_its_token_expires(tmp_path, agent_runner):
    expires = time.time() + 0.5
    tokens = Tokens({"short": AgentIdentity("node-a", expires_unix_s=expires)})
    server, store, stream, token_file = _run(tmp_path, agent_runner, tokens, "node-a", "short")
    try:
        eventually(lambda: store.latest("node-a") is not None)
        eventually(lambda: time.time() > expires)
        stream.offer(sections(snapshot(2.0)))
        eventually(lambda: server.service.unauthenticated >= 1)  # the next report after exp closes it
    finally:
        server.stop()


def test_no_token_at_all_is_unauthenticated(tmp_path, agent_runner):
    server_tls, client_tls = _server_tls(tmp_path)
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=server_tls, authenticate=Tokens({}))
    port = server.start()
    try:
        stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=client_tls, backoff_base_s=0.05, backoff_max_s=0.1)
        stream.offer(sections(snapshot(1.0)))
        agent_runner(stream)
        eventually(lambda: server.service.unauthenticated >= 2)
        assert store.latest("node-a") is None
    finally:
        server.stop()


def test_a_missing_certificate_is_an_oserror_and_a_later_start_works(tmp_path):
    server = ReceiverServer(NodeReportStore(), "127.0.0.1:0", tls=ServerTls(tmp_path / "tls.crt", tmp_path / "tls.key"),
                            authenticate=Tokens({}))
    with pytest.raises(OSError):
        server.start()
    _server_tls(tmp_path)
    try:
        assert server.start() > 0
    finally:
        server.stop()


# --- what a TokenReview answer means -------------------------------------------------------

ACCOUNT = "caldera-system:caldera-nodeagent"
GOOD = {"authenticated": True, "audiences": ["caldera-scheduler"],
        "user": {"username": f"system:serviceaccount:{ACCOUNT}", "extra": {NODE_NAME: ["node-a"]}}}


def _jwt(exp: int) -> str:
    import base64
    import json
    body = base64.urlsafe_b64encode(json.dumps({"exp": exp}).encode()).decode().rstrip("=")
    return f"e30.{body}.sig"


def test_a_good_review_names_the_node_and_the_expiry():
    assert identity_from_review(GOOD, "caldera-scheduler", ACCOUNT, _jwt(1900000000)) == \
        AgentIdentity("node-a", 1900000000.0)
    assert identity_from_review(GOOD, "caldera-scheduler", ACCOUNT, "opaque").expires_unix_s is None


@pytest.mark.parametrize("status, reason", [
    pytest.param({"authenticated": False, "error": "token expired"}, "token expired", id="refused"),
    pytest.param(dict(GOOD, audiences=["https://kubernetes.default.svc"]), "audience", id="api-server-token"),
    pytest.param(dict(GOOD, user={"username": "system:serviceaccount:default:x", "extra": {NODE_NAME: ["node-a"]}}),
                 "not the agent's ServiceAccount", id="other-account"),
    pytest.param(dict(GOOD, user={"username": f"system:serviceaccount:{ACCOUNT}"}), "names no node",
                 id="secret-based-token"),
])
def test_reviews_that_do_not_identify_an_agent(status, reason):
    with pytest.raises(Unauthenticated, match=reason):
        identity_from_review(status, "caldera-scheduler", ACCOUNT, "t")


class FakeApi:
    """Stands in for KubeClient.create of a TokenReview (the control-plane tests use the real one)."""

    def __init__(self, status: dict):
        self.status, self.calls = status, 0

    def create(self, url: str, body: dict) -> dict:
        self.calls += 1
        assert url.endswith("/tokenreviews") and body["spec"]["audiences"] == ["caldera-scheduler"]
        return {"status": self.status}


def test_the_reviewer_caches_answers_per_token_for_a_minute():
    api, now = FakeApi(GOOD), [1000.0]
    reviewer = TokenReviewer(api, clock=lambda: now[0])
    assert reviewer("t").node == reviewer("t").node == "node-a"
    assert api.calls == 1
    now[0] += 61
    reviewer("t")
    assert api.calls == 2
    api.status = {"authenticated": False}
    now[0] += 61
    with pytest.raises(Unauthenticated):
        reviewer("t")
    with pytest.raises(Unauthenticated):  # the refusal is cached too
        reviewer("t")
    assert api.calls == 3


def test_the_reviewer_answers_known_tokens_without_blocking_and_only_accepted_ones():
    api, now = FakeApi(GOOD), [1000.0]
    reviewer = TokenReviewer(api, clock=lambda: now[0])
    assert reviewer.cached("t") is None
    reviewer("t")
    assert reviewer.cached("t").node == "node-a" and api.calls == 1
    now[0] += 61
    assert reviewer.cached("t") is None
    api.status = {"authenticated": False}
    with pytest.raises(Unauthenticated):
        reviewer("bad")
    assert reviewer.cached("bad") is None


def test_the_reviewer_cache_is_bounded_and_drops_refusals_first(monkeypatch):
    monkeypatch.setattr("central.agents.tokenreview.MAX_CACHED", 3)
    api, now = FakeApi(GOOD), [1000.0]
    reviewer = TokenReviewer(api, clock=lambda: now[0])
    reviewer("good-1")
    api.status = {"authenticated": False}
    for i in range(5):
        now[0] += 1
        with pytest.raises(Unauthenticated):
            reviewer(f"bad-{i}")
    assert len(reviewer._cache) == 3
    assert reviewer.cached("good-1") is not None  # a flood of refusals does not evict an agent


def test_peer_addresses_drop_the_port():
    assert peer_address("ipv4:127.0.0.1:51234") == "ipv4:127.0.0.1"
    assert peer_address("ipv6:[::1]:51234") == "ipv6:[::1]"
    assert peer_address("unix:/tmp/s") == "unix:/tmp/s"


class SlowTokens(Tokens):
    """Unknown tokens are reviewed slowly (until `release`); the known one is cached."""

    def __init__(self, table: dict[str, AgentIdentity]):
        super().__init__(table)
        self.release, self.lock = threading.Event(), threading.Lock()
        self.running = self.most = 0

    def cached(self, token: str) -> AgentIdentity | None:
        return self.table.get(token)

    def __call__(self, token: str) -> AgentIdentity:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self.release.wait(20)
            return super().__call__(token)
        finally:
            with self.lock:
                self.running -= 1


def test_unknown_tokens_from_one_address_are_bounded_and_known_agents_still_stream(tmp_path, agent_runner):
    """10 streams with unknown tokens from 127.0.0.1: at most 2 reviews at once, 6 waiting in
    all, the other 4 refused at once; the agent whose token is known streams meanwhile."""
    tokens = SlowTokens({"good": AgentIdentity("node-a", time.time() + 3600)})
    server, store, stream, _ = _run(tmp_path, agent_runner, tokens, "node-a", "good")
    server.service.reviews_per_peer, server.service.unauthenticated_per_peer = 2, 6
    channel = grpc.secure_channel(f"127.0.0.1:{server.port}", grpc.ssl_channel_credentials(
        (tmp_path / "ca.crt").read_bytes()), options=[("grpc.ssl_target_name_override", "localhost")])
    stub = pb_grpc.NodeReportServiceStub(channel)
    codes: list[grpc.StatusCode] = []

    def bad(i: int) -> None:
        try:
            list(stub.Report(iter([pb.NodeReport(node_name="node-a")]), metadata=[("authorization", f"Bearer bad-{i}")],
                             timeout=30))
        except grpc.RpcError as err:
            codes.append(err.code())

    threads = [threading.Thread(target=bad, args=(i,)) for i in range(10)]
    try:
        for thread in threads:
            thread.start()
        eventually(lambda: server.service.throttled == 4, what="4 streams over the bound refused")
        eventually(lambda: "node-a" in store.fresh_nodes(), what="the known agent's report, reviews pending")
        assert tokens.most == 2
        tokens.release.set()
        for thread in threads:
            thread.join(30)
        assert sorted(c.name for c in codes) == ["RESOURCE_EXHAUSTED"] * 4 + ["UNAUTHENTICATED"] * 6
        eventually(lambda: server.service._waiting == {} and server.service._review_slots == {},
                   what="the per-address bookkeeping emptied")
    finally:
        tokens.release.set()
        channel.close()
        server.stop()
