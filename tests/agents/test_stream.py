"""Agent stream -> central receiver over real loopback gRPC."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from central.agents import NodeReportStore, ReceiverServer, ServerTls
from central.agents.server import ReceiverCollector
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.report import sections
from nodeagent.stream import ReportStream, TlsFiles
from tests.agents.certs import CertAuthority
from tests.agents.reports import snapshot
from tests.ports import free_port
from tests.waiting import eventually


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_full_then_deltas_then_heartbeat(agent_runner) -> None:
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = server.start()
    try:
        stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=None, heartbeat_s=0.3)
        stream.offer(sections(snapshot(1.0)))
        agent_runner(stream)
        eventually(lambda: store.latest("node-a") is not None)
        first = store.latest("node-a")
        assert first.full and first.HasField("topology") and first.resources.cpu_usage_cores.last == 1.0
        stream.offer(sections(snapshot(2.5)))
        eventually(lambda: store.latest("node-a").resources.cpu_usage_cores.last == 2.5)
        merged = store.latest("node-a")
        assert merged.topology.threads == 8  # kept from the full report
        heartbeats = stream.stats.heartbeats
        eventually(lambda: stream.stats.heartbeats > heartbeats)
        eventually(lambda: stream.stats.acked == stream.stats.sent)
        assert stream.stats.rejected == 0 and stream.stats.connected
        assert store.fresh_nodes() == ["node-a"]
    finally:
        server.stop()


def test_reconnects_after_server_restart(agent_runner) -> None:
    port = free_port()
    store = NodeReportStore()
    server = ReceiverServer(store, f"127.0.0.1:{port}", tls=None)
    server.start()
    stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=None, heartbeat_s=0.2,
                          backoff_base_s=0.05, backoff_max_s=0.3, rng=random.Random(7))
    stream.offer(sections(snapshot(1.0)))
    agent_runner(stream)
    eventually(lambda: store.latest("node-a") is not None)
    server.stop()
    eventually(lambda: stream.stats.reconnects >= 2)
    restarted_store = NodeReportStore()  # the scheduler restarted and lost its state
    restarted = ReceiverServer(restarted_store, f"127.0.0.1:{port}", tls=None)
    restarted.start()
    try:
        eventually(lambda: restarted_store.latest("node-a") is not None)
        report = restarted_store.latest("node-a")
        assert report.full and report.HasField("topology")  # a new stream starts with a full report
    finally:
        restarted.stop()


@pytest.mark.parametrize("attempt, low, high", [
    pytest.param(0, 0.25, 0.5, id="first"),
    pytest.param(3, 2.0, 4.0, id="doubling"),
    pytest.param(20, 15.0, 30.0, id="capped"),
])
def test_backoff_has_jitter_within_bounds(attempt: int, low: float, high: float) -> None:
    stream = ReportStream("x", "n", tls=None, backoff_base_s=0.5, backoff_max_s=30, rng=random.Random(1))
    delays = {stream.backoff_delay(attempt) for _ in range(20)}
    assert all(low <= d <= high for d in delays) and len(delays) > 1


def test_staleness_with_an_injected_clock() -> None:
    clock = Clock()
    store = NodeReportStore(stale_after_s=30, clock=clock)
    store.apply(pb.NodeReport(node_name="n1", agent_epoch="e", sequence=1, full=True))
    store.apply(pb.NodeReport(node_name="n2", agent_epoch="e", sequence=1, full=True))
    clock.now += 20
    store.apply(pb.NodeReport(node_name="n2", agent_epoch="e", sequence=2))  # heartbeat
    clock.now += 15
    assert store.fresh_nodes() == ["n2"] and store.stale_nodes() == ["n1"]
    assert store.latest("n1") is None and store.latest("n1", include_stale=True).sequence == 1
    assert store.latest("n2").sequence == 2


def test_delta_without_full_report_asks_for_resync(agent_runner) -> None:
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = server.start()
    try:
        stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=None, heartbeat_s=0.1)
        stream.offer(sections(snapshot(1.0)))
        agent_runner(stream)
        eventually(lambda: store.latest("node-a") is not None)
        store.forget("node-a")  # as if the scheduler lost the node's state
        stream.offer(sections(snapshot(3.0)))
        eventually(lambda: stream.stats.rejected >= 1)
        eventually(lambda: (r := store.latest("node-a")) is not None and r.full)
        assert server.service.stale >= 1
        registry = CollectorRegistry()
        registry.register(ReceiverCollector(server.service))
        assert registry.get_sample_value("caldera_agent_reports_total", {"result": "stale"}) == server.service.stale
        assert registry.get_sample_value("caldera_agent_reports_total", {"result": "accepted"}) >= 2
        assert registry.get_sample_value("caldera_agent_nodes", {"state": "fresh"}) == 1
    finally:
        server.stop()


def _tls_pair(tmp_path: Path, node_cert: str) -> tuple[ServerTls, TlsFiles]:
    ca = CertAuthority(tmp_path)
    server_cert, server_key = ca.issue("caldera-scheduler", ["localhost"], ip=True)
    client_cert, client_key = ca.issue(node_cert, [node_cert])
    return (ServerTls(server_cert, server_key, client_ca_file=ca.ca_file),
            TlsFiles(ca.ca_file, client_cert, client_key, server_name="localhost"))


def test_mtls_accepts_the_node_named_by_the_certificate(tmp_path: Path, agent_runner) -> None:
    server_tls, client_tls = _tls_pair(tmp_path, "node-a")
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=server_tls)
    port = server.start()
    try:
        stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=client_tls)
        stream.offer(sections(snapshot(1.0)))
        agent_runner(stream)
        eventually(lambda: store.latest("node-a") is not None)
    finally:
        server.stop()


def test_mtls_rejects_a_report_about_another_node(tmp_path: Path, agent_runner) -> None:
    server_tls, client_tls = _tls_pair(tmp_path, "node-b")
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=server_tls)
    port = server.start()
    try:
        liar = ReportStream(f"127.0.0.1:{port}", "node-a", tls=client_tls, backoff_base_s=0.05, backoff_max_s=0.1)
        liar.offer(sections(snapshot(1.0)))
        agent_runner(liar)
        eventually(lambda: server.service.denied >= 2 and liar.stats.reconnects >= 2)
        assert store.latest("node-a") is None and liar.stats.acked == 0
    finally:
        server.stop()


def test_plaintext_client_cannot_reach_an_mtls_server(tmp_path: Path, agent_runner) -> None:
    server_tls, _ = _tls_pair(tmp_path, "node-a")
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=server_tls)
    port = server.start()
    try:
        stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=None, backoff_base_s=0.05, backoff_max_s=0.1)
        stream.offer(sections(snapshot(1.0)))
        agent_runner(stream)
        eventually(lambda: stream.stats.reconnects >= 2)
        assert store.latest("node-a") is None
    finally:
        server.stop()


def test_a_plaintext_stream_is_bound_to_its_first_node() -> None:
    import grpc

    from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reports = [pb.NodeReport(node_name="node-a", agent_epoch="e", sequence=1, full=True),
                       pb.NodeReport(node_name="node-b", agent_epoch="e", sequence=2, full=True)]
            acks = pb_grpc.NodeReportServiceStub(channel).Report(iter(reports))
            with pytest.raises(grpc.RpcError) as denied:
                list(acks)
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert store.latest("node-a") is not None and store.latest("node-b") is None
    finally:
        server.stop()


def test_unacknowledged_reports_are_bounded_and_forgotten_on_reconnect(agent_runner) -> None:
    """A receiver that reads but never acks: the agent stops at max_in_flight and coalesces;
    after that receiver dies, a healthy one on the same port gets reports again."""
    from concurrent import futures

    import grpc

    from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

    received: list[int] = []

    class Silent(pb_grpc.NodeReportServiceServicer):
        def Report(self, requests, context):
            for report in requests:
                received.append(report.sequence)
            return iter(())

    port = free_port()
    silent = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_NodeReportServiceServicer_to_server(Silent(), silent)
    silent.add_insecure_port(f"127.0.0.1:{port}")
    silent.start()
    stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=None, heartbeat_s=0.01, max_in_flight=3,
                          backoff_base_s=0.05, backoff_max_s=0.2)
    agent_runner(stream)
    for i in range(50):
        stream.offer(sections(snapshot(float(i))))
        time.sleep(0.005)
    eventually(lambda: len(received) >= 3)
    time.sleep(0.3)
    assert len(received) == 3 and stream.stats.sent == 3
    silent.stop(0)
    store = NodeReportStore()
    healthy = ReceiverServer(store, f"127.0.0.1:{port}", tls=None)
    healthy.start()
    try:
        eventually(lambda: store.latest("node-a") is not None)
    finally:
        healthy.stop()


def _raw_stream(port: int, reports: list[pb.NodeReport]) -> list[pb.Ack]:
    import grpc

    from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return list(pb_grpc.NodeReportServiceStub(channel).Report(iter(reports)))


def test_a_flooding_stream_is_rate_limited() -> None:
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=None, max_reports_per_s=5)
    port = server.start()
    try:
        flood = [pb.NodeReport(node_name="node-a", agent_epoch="e", sequence=i, full=True) for i in range(1, 41)]
        acks = _raw_stream(port, flood)
        accepted = [a for a in acks if a.accepted]
        refused = [a for a in acks if not a.accepted]
        assert len(acks) == 40 and 10 <= len(accepted) < 20  # a burst of 10, then ~5/s
        assert all(a.resync and "rate" in a.reason for a in refused)
        assert server.service.rate_limited == len(refused)
    finally:
        server.stop()


def test_oversized_report_is_refused() -> None:
    import grpc

    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=None, max_message_bytes=1024)
    port = server.start()
    try:
        huge = pb.NodeReport(node_name="node-a", agent_epoch="e", sequence=1, full=True)
        huge.pods.pods.extend(pb.PodUsage(namespace="ns", name=f"pod-{i}") for i in range(200))
        with pytest.raises(grpc.RpcError) as err:
            _raw_stream(port, [huge])
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert store.latest("node-a") is None
    finally:
        server.stop()


def test_noise_is_not_reported_and_the_heartbeat_carries_the_latest_values(agent_runner) -> None:
    store = NodeReportStore()
    server = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = server.start()
    try:
        stream = ReportStream(f"127.0.0.1:{port}", "node-a", tls=None, heartbeat_s=1.0)
        stream.offer(sections(snapshot(1.0)))
        agent_runner(stream)
        eventually(lambda: stream.stats.acked == 1)
        for i in range(10):  # 8 cores x 2 % = 0.16: these moves are noise
            stream.offer(sections(snapshot(1.0 + 0.01 * i)))
            time.sleep(0.02)
        assert stream.stats.sent - stream.stats.heartbeats == 1  # the full report; no change sent since
        # A heartbeat carries the latest figure all the same.
        eventually(lambda: store.latest("node-a").resources.cpu_usage_cores.last == pytest.approx(1.09))
        assert stream.stats.sent - stream.stats.heartbeats == 1
        stream.offer(sections(snapshot(3.0)))  # a real move goes out at once
        eventually(lambda: store.latest("node-a").resources.cpu_usage_cores.last == 3.0)
    finally:
        server.stop()
