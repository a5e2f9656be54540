"""gRPC server for the agents' report streams (grpc.aio: one event loop, no thread per stream).

Entitlement, NodeRestriction-style: with mTLS a stream may only report about the node named by
its client certificate (CN or a SAN); in plaintext mode (only when explicitly configured) a
stream is bound to the first node it reports about. Either violation aborts the stream with
PERMISSION_DENIED, so a lying agent can only hurt its own node. A delta the store cannot merge
is refused with `resync` set and the agent sends a full report next. Messages are capped in size
and each stream in rate (a token bucket: `max_reports_per_s`, bursts of twice that); a report
over the rate is refused unapplied, with `resync` so the agent's next report is complete.
`ReceiverServer` runs the loop on its own thread so a synchronous scheduler can embed it;
`ReceiverCollector` exports its counters (`caldera_agent_reports_total{result}`: accepted,
denied, stale, rate_limited) and the fresh/stale node counts to the scheduler's /metrics.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Iterator

import grpc
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from central.agents.store import NodeReportStore, StaleDelta
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

log = logging.getLogger("central.agents")


@dataclass(frozen=True)
class ServerTls:
    ca_file: Path
    cert_file: Path
    key_file: Path


def peer_names(context: grpc.aio.ServicerContext) -> set[str] | None:
    """Names in the client certificate, or None on a plaintext connection."""
    auth = context.auth_context()
    if auth.get("transport_security_type") != [b"ssl"]:
        return None
    names = auth.get("x509_common_name", []) + auth.get("x509_subject_alternative_name", [])
    return {n.decode() for n in names}


class TokenBucket:
    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.at = burst, time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class ReportService(pb_grpc.NodeReportServiceServicer):
    def __init__(self, store: NodeReportStore, max_reports_per_s: float = 20.0) -> None:
        self.store = store
        self.max_reports_per_s = max_reports_per_s
        self.accepted = 0
        self.denied = 0
        self.stale = 0
        self.rate_limited = 0

    async def Report(self, requests: AsyncIterator[pb.NodeReport],
                     context: grpc.aio.ServicerContext) -> AsyncIterator[pb.Ack]:
        names = peer_names(context)
        bound: str | None = None
        bucket = TokenBucket(self.max_reports_per_s, 2 * self.max_reports_per_s)
        async for report in requests:
            node = report.node_name
            if not node or (names is not None and node not in names) or bound not in (None, node):
                self.denied += 1
                log.warning("stream from %s may not report node %r", context.peer(), node)
                await context.abort(grpc.StatusCode.PERMISSION_DENIED,
                                    f"this stream is not entitled to report node {node!r}")
            bound = node
            if not bucket.take():
                self.rate_limited += 1
                yield pb.Ack(sequence=report.sequence, accepted=False, resync=True, reason="rate limit exceeded")
                continue
            try:
                self.store.apply(report)
            except StaleDelta:
                self.stale += 1
                yield pb.Ack(sequence=report.sequence, accepted=False, resync=True,
                             reason="no full report to apply this delta to")
                continue
            self.accepted += 1
            yield pb.Ack(sequence=report.sequence, accepted=True)


class ReceiverCollector:
    """Prometheus view of a receiver, read at scrape time."""

    def __init__(self, service: ReportService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        s = self.service
        reports = CounterMetricFamily("caldera_agent_reports", "Agent reports by result: accepted; denied "
                                      "(stream not entitled to the node); stale (a delta without its full "
                                      "report); rate_limited.", labels=["result"])
        for result, n in (("accepted", s.accepted), ("denied", s.denied), ("stale", s.stale),
                          ("rate_limited", s.rate_limited)):
            reports.add_metric([result], n)
        nodes = GaugeMetricFamily("caldera_agent_nodes", "Nodes with a report, by freshness.", labels=["state"])
        nodes.add_metric(["fresh"], len(s.store.fresh_nodes()))
        nodes.add_metric(["stale"], len(s.store.stale_nodes()))
        yield from (reports, nodes)


class ReceiverServer:
    """Owns a grpc.aio server on a private event loop thread."""

    def __init__(self, store: NodeReportStore, address: str, *, tls: ServerTls | None,
                 max_message_bytes: int = 4 << 20, max_reports_per_s: float = 20.0) -> None:
        self.store, self.address, self.tls = store, address, tls
        self.max_message_bytes = max_message_bytes
        self.service = ReportService(store, max_reports_per_s)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agent-receiver", daemon=True)
        self._server: grpc.aio.Server | None = None

    async def _start(self) -> int:
        options = [
            ("grpc.so_reuseport", 0),  # a stale server on the same port must not steal streams
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ]
        self._server = grpc.aio.server(options=options)
        pb_grpc.add_NodeReportServiceServicer_to_server(self.service, self._server)
        if self.tls is None:
            port = self._server.add_insecure_port(self.address)
        else:
            credentials = grpc.ssl_server_credentials(
                [(self.tls.key_file.read_bytes(), self.tls.cert_file.read_bytes())],
                root_certificates=self.tls.ca_file.read_bytes(),
                require_client_auth=True,
            )
            port = self._server.add_secure_port(self.address, credentials)
        await self._server.start()
        return port

    def start(self) -> int:
        """Starts serving; returns the bound port (useful with address 'host:0')."""
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self.port

    def stop(self, grace_s: float = 0.5) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(grace_s), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
