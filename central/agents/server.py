"""gRPC server for the agents' report streams (grpc.aio: one event loop, no thread per stream).

Identity and entitlement, NodeRestriction-style. An agent proves who it is either with its
projected ServiceAccount token (`authorization: Bearer` metadata; audience-bound and carrying
the node name, checked by an injected `authenticate`, TokenReview in production) or with a
client certificate (mTLS, CN or a SAN = the node). A stream may only report about that node;
in plaintext mode without an authenticator (tests, trusted networks) it is bound to the first
node it reports about. A violation aborts the stream with PERMISSION_DENIED (UNAUTHENTICATED
for a missing or refused token, or one that expired while the stream was open: the agent
reconnects with the kubelet's refreshed token), so a lying agent can only hurt its own node.
A delta the store cannot merge is refused with `resync` set and the agent sends a full report
next. Messages are capped in size (1 MiB: a full report of a 1,024-CPU node with 250 pods
is about 60 kB; what a report says is held against its Node later, see `central.agents.bounds`)
and each stream in rate (a token bucket: `max_reports_per_s`, bursts of twice that); a report
over the rate is refused unapplied, with `resync` so the agent's next report is complete.
A token not yet reviewed costs a TokenReview on the API server, so per peer address at most
`reviews_per_peer` reviews run at once and at most `unauthenticated_per_peer` streams wait for
one; more are refused with RESOURCE_EXHAUSTED. A token the authenticator already accepted (its
`cached`) skips both, so a flood of unknown tokens from one address neither costs the API server
more than a few reviews at a time nor delays the agents already known, and agents that share an
address (all of them under `caldera up`, from 127.0.0.1) wait for a slot instead of being refused.
`ReceiverServer` runs the loop on its own thread so a synchronous scheduler can embed it;
`ReceiverCollector` exports its counters (`caldera_agent_reports_total{result}`: accepted,
denied, unauthenticated, throttled, stale, rate_limited) and the fresh/stale node counts to /metrics.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Callable, Iterator

import grpc
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from central.agents.store import NodeReportStore, StaleDelta
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

log = logging.getLogger("central.agents")


@dataclass(frozen=True)
class ServerTls:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None  # set: every agent must present a client certificate (mTLS)


class Unauthenticated(Exception):
    """A token that does not prove an agent's identity; the message says why (for the log)."""


@dataclass(frozen=True)
class AgentIdentity:
    node: str
    expires_unix_s: float | None = None  # the token's expiry: the stream ends then


Authenticator = Callable[[str], AgentIdentity]  # blocking; raises Unauthenticated


def bearer_token(context: grpc.aio.ServicerContext) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer "):].strip()
    return None


def peer_names(context: grpc.aio.ServicerContext) -> set[str] | None:
    """Names in the client certificate, or None without one (plaintext, or server-only TLS)."""
    auth = context.auth_context()
    if auth.get("transport_security_type") != [b"ssl"]:
        return None
    names = auth.get("x509_common_name", []) + auth.get("x509_subject_alternative_name", [])
    return {n.decode() for n in names} or None


REVIEWS_PER_PEER = 4  # TokenReviews in flight for one peer address
UNAUTHENTICATED_PER_PEER = 128  # streams of one address waiting for a review; more are refused


def peer_address(peer: str) -> str:
    """The address of a gRPC peer without its port: ipv4:10.0.0.7:5123 -> ipv4:10.0.0.7."""
    return peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer


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
    def __init__(self, store: NodeReportStore, max_reports_per_s: float = 20.0,
                 authenticate: Authenticator | None = None) -> None:
        self.store = store
        self.max_reports_per_s = max_reports_per_s
        self.authenticate = authenticate
        self.accepted = 0
        self.denied = 0
        self.stale = 0
        self.unauthenticated = 0
        self.throttled = 0
        self.rate_limited = 0
        self.reviews_per_peer = REVIEWS_PER_PEER
        self.unauthenticated_per_peer = UNAUTHENTICATED_PER_PEER
        self._waiting: dict[str, int] = {}  # peer address -> streams waiting for or in a review
        self._review_slots: dict[str, asyncio.Semaphore] = {}

    async def _identify(self, context: grpc.aio.ServicerContext) -> tuple[set[str] | None, float | None]:
        """(the node names this stream may report, the time its right ends); None: not checked."""
        token = bearer_token(context)
        if token is not None and self.authenticate is not None:
            cached = getattr(self.authenticate, "cached", None)
            identity = cached(token) if cached is not None else None
            if identity is None:
                identity = await self._review(context, token)
            return {identity.node}, identity.expires_unix_s
        names = peer_names(context)
        if names is None and self.authenticate is not None:
            await self._refuse(context, "no bearer token (the agent's projected ServiceAccount token)")
        return names, None

    async def _review(self, context: grpc.aio.ServicerContext, token: str) -> AgentIdentity:
        """`authenticate(token)` within the per-peer bounds (all on the event loop: no lock)."""
        assert self.authenticate is not None
        peer = peer_address(context.peer())
        if self._waiting.get(peer, 0) >= self.unauthenticated_per_peer:
            self.throttled += 1
            log.warning("stream from %s refused: %d unauthenticated streams from its address already",
                        context.peer(), self.unauthenticated_per_peer)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                "too many unauthenticated streams from this address; retry later")
        self._waiting[peer] = self._waiting.get(peer, 0) + 1
        try:
            slot = self._review_slots.setdefault(peer, asyncio.Semaphore(self.reviews_per_peer))
            async with slot:
                try:
                    return await asyncio.get_running_loop().run_in_executor(None, self.authenticate, token)
                except Unauthenticated as err:
                    await self._refuse(context, f"token refused: {err}")
                    raise  # abort raises; for the type checker
        finally:
            self._waiting[peer] -= 1
            if not self._waiting[peer]:
                del self._waiting[peer], self._review_slots[peer]

    async def _refuse(self, context: grpc.aio.ServicerContext, why: str) -> None:
        self.unauthenticated += 1
        log.warning("stream from %s refused: %s", context.peer(), why)
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, why)

    async def Report(self, requests: AsyncIterator[pb.NodeReport],
                     context: grpc.aio.ServicerContext) -> AsyncIterator[pb.Ack]:
        names, expires = await self._identify(context)
        bound: str | None = None
        bucket = TokenBucket(self.max_reports_per_s, 2 * self.max_reports_per_s)
        async for report in requests:
            node = report.node_name
            if expires is not None and time.time() >= expires:
                await self._refuse(context, "the token expired; reconnect with the refreshed one")
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
                                      "(stream not entitled to the node); unauthenticated (streams refused "
                                      "for their token); throttled (unauthenticated streams over the per-address "
                                      "bound); stale (a delta without its full report); "
                                      "rate_limited.", labels=["result"])
        for result, n in (("accepted", s.accepted), ("denied", s.denied), ("unauthenticated", s.unauthenticated),
                          ("throttled", s.throttled),
                          ("stale", s.stale), ("rate_limited", s.rate_limited)):
            reports.add_metric([result], n)
        nodes = GaugeMetricFamily("caldera_agent_nodes", "Nodes with a report, by freshness.", labels=["state"])
        nodes.add_metric(["fresh"], len(s.store.fresh_nodes()))
        nodes.add_metric(["stale"], len(s.store.stale_nodes()))
        yield from (reports, nodes)


class ReceiverServer:
    """Owns a grpc.aio server on a private event loop thread."""

    def __init__(self, store: NodeReportStore, address: str, *, tls: ServerTls | None,
                 authenticate: Authenticator | None = None,
                 max_message_bytes: int = 1 << 20, max_reports_per_s: float = 20.0) -> None:
        self.store, self.address, self.tls = store, address, tls
        self.max_message_bytes = max_message_bytes
        self.service = ReportService(store, max_reports_per_s, authenticate)
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
        port: int
        if self.tls is None:
            port = self._server.add_insecure_port(self.address)
        else:
            port = self._server.add_secure_port(self.address, self._credentials(self.tls))
        await self._server.start()
        return port

    @staticmethod
    def _credentials(tls: ServerTls) -> grpc.ServerCredentials:
        """Credentials that re-read the files when they change (a renewed Secret), keeping the
        last good pair if the new one cannot be read."""
        stamp: list[tuple[float, float]] = []

        def current() -> grpc.ServerCertificateConfiguration | None:
            try:
                now = (tls.cert_file.stat().st_mtime, tls.key_file.stat().st_mtime)
                if stamp and stamp[0] == now:
                    return None
                config = grpc.ssl_server_certificate_configuration(
                    [(tls.key_file.read_bytes(), tls.cert_file.read_bytes())],
                    root_certificates=tls.client_ca_file.read_bytes() if tls.client_ca_file else None)
            except OSError as err:
                log.error("agent endpoint: cannot read its certificate: %s", err)
                return None
            stamp[:] = [now]
            return config

        initial = current()
        if initial is None:
            raise OSError(f"cannot read {tls.cert_file} / {tls.key_file}")
        return grpc.dynamic_ssl_server_credentials(initial, current,
                                                   require_client_authentication=tls.client_ca_file is not None)

    def start(self) -> int:
        """Starts serving; returns the bound port (useful with address 'host:0'). OSError when the
        certificate cannot be read: the caller may try again."""
        if not self._thread.is_alive():
            self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self.port

    def stop(self, grace_s: float = 0.5) -> None:
        if self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.stop(grace_s), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
