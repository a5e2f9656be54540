"""The agent's end of the report stream: full report at connect, then changes plus heartbeats.

A section counts as changed when it moved by more than the deadband (`nodeagent.deadband`);
a heartbeat, due `heartbeat_s` after the last report, carries the latest resources section.

Memory is bounded by design: `offer` replaces one pending snapshot (newer state supersedes
older, nothing queues up while disconnected), and at most `max_in_flight` reports wait for an
ack; beyond that the sender pauses and snapshots keep coalescing. A broken stream reconnects
with exponential backoff and jitter (half fixed, half random), so a restarted scheduler is not
hit by every node at the same instant; a fresh stream always starts with a full report.

Identity: the projected ServiceAccount token in `token_file` (audience caldera-scheduler) goes
with every stream as `authorization: Bearer` metadata, re-read at each connect because the
kubelet rotates it; TLS then only authenticates the server. A client certificate (mTLS) is the
alternative, for clusters that issue per-node certificates.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import grpc
from google.protobuf.message import Message

from nodeagent import deadband
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc
from nodeagent.deadband import Bands
from nodeagent.report import SECTIONS

log = logging.getLogger("nodeagent.stream")


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path
    cert_file: Path | None = None  # a client certificate: only for mTLS
    key_file: Path | None = None
    server_name: str = ""  # overrides the name checked against the server certificate


def channel_credentials(tls: TlsFiles) -> grpc.ChannelCredentials:
    root = tls.ca_file.read_bytes()
    key = chain = None
    if tls.cert_file is not None and tls.key_file is not None:  # a client certificate: mTLS
        key, chain = tls.key_file.read_bytes(), tls.cert_file.read_bytes()
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=chain)


@dataclass
class StreamStats:
    connected: bool = False
    reconnects: int = 0
    sent: int = 0
    acked: int = 0
    rejected: int = 0
    heartbeats: int = 0
    last_ack_unix_s: float = 0.0
    refused: str = ""  # why the scheduler refused this agent's identity; "" once a report is acked


class ReportStream:
    def __init__(self, target: str, node_name: str, *, tls: TlsFiles | None, token_file: Path | None = None,
                 heartbeat_s: float = 10.0, backoff_base_s: float = 0.5, backoff_max_s: float = 30.0,
                 max_in_flight: int = 8, deadband_percent: float = 2.0, rng: random.Random | None = None) -> None:
        self.target, self.node_name, self.tls, self.token_file = target, node_name, tls, token_file
        self.heartbeat_s, self.max_in_flight = heartbeat_s, max_in_flight
        self.deadband_percent = deadband_percent
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.epoch = uuid.uuid4().hex
        self.stats = StreamStats()
        self._rng = rng or random.Random()
        self._cond = threading.Condition()
        self._pending: dict[str, Message] | None = None
        self._version = 0  # bumps on every offer
        self._sequence = 0
        self._acked_sequence = 0
        self._resync = False
        self._last_failure = ""

    def offer(self, sections: dict[str, Message]) -> None:
        with self._cond:
            self._pending, self._version = sections, self._version + 1
            self._cond.notify_all()

    def backoff_delay(self, attempt: int) -> float:
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2.0 ** attempt)
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def run(self, stop: threading.Event) -> None:
        attempt = 0
        while not stop.is_set():
            acked_before = self.stats.acked
            try:
                self._session(stop)
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                details = exc.details() if hasattr(exc, "details") else str(exc)
                refused = code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
                self.stats.refused = f"{code.name}: {details}" if refused and code else ""
                self._log(f"report stream to {self.target} broke: {code} {details}")
            except (OSError, ValueError) as exc:  # unreadable TLS files or token, a bad target: retried too
                self._log(f"report stream to {self.target} cannot start: {exc}")
            finally:
                self.stats.connected = False
            if stop.is_set():
                break
            attempt = 0 if self.stats.acked > acked_before else attempt + 1
            self.stats.reconnects += 1
            stop.wait(self.backoff_delay(attempt))

    def _log(self, message: str) -> None:
        """A failure once at WARNING; the same failure again (every reconnect) only at DEBUG."""
        log.log(logging.DEBUG if message == self._last_failure else logging.WARNING, "%s", message)
        self._last_failure = message

    def _channel(self) -> grpc.Channel:
        options: list[tuple[str, int | str]] = [("grpc.keepalive_time_ms", 30_000), ("grpc.keepalive_timeout_ms", 10_000)]
        if self.tls is None:
            return grpc.insecure_channel(self.target, options=options)
        if self.tls.server_name:
            options.append(("grpc.ssl_target_name_override", self.tls.server_name))
        return grpc.secure_channel(self.target, channel_credentials(self.tls), options=options)

    def _session(self, stop: threading.Event) -> None:
        ended = threading.Event()
        with self._cond:  # reports in flight on a dead stream will never be acked
            self._acked_sequence = self._sequence
        metadata = None
        if self.token_file is not None:  # re-read each time: the kubelet rotates projected tokens
            metadata = [("authorization", "Bearer " + self.token_file.read_text().strip())]
        with self._channel() as channel:
            call = pb_grpc.NodeReportServiceStub(channel).Report(self._reports(stop, ended), metadata=metadata)
            watcher = threading.Thread(target=self._cancel_on_stop, args=(call, stop, ended), daemon=True)
            watcher.start()
            try:
                for ack in call:
                    self._on_ack(ack)
            finally:
                ended.set()
                with self._cond:
                    self._cond.notify_all()

    @staticmethod
    def _cancel_on_stop(call: grpc.Future, stop: threading.Event, ended: threading.Event) -> None:
        while not ended.wait(0.2):
            if stop.is_set():
                call.cancel()
                return

    def _on_ack(self, ack: pb.Ack) -> None:
        with self._cond:
            self.stats.connected = True
            self._acked_sequence = max(self._acked_sequence, ack.sequence)
            if ack.accepted:
                self.stats.acked += 1
                self.stats.refused = ""
                self._last_failure = ""
                self.stats.last_ack_unix_s = time.time()
            else:
                self.stats.rejected += 1
                log.warning("report %d rejected: %s", ack.sequence, ack.reason)
            self._resync = self._resync or ack.resync
            self._cond.notify_all()

    def _reports(self, stop: threading.Event, ended: threading.Event) -> Iterator[pb.NodeReport]:
        sent: dict[str, Message] = {}
        seen_version, last_send = -1, 0.0
        while not (stop.is_set() or ended.is_set()):
            with self._cond:
                in_flight = self._sequence - self._acked_sequence
                heartbeat_due = time.monotonic() - last_send >= self.heartbeat_s
                if in_flight >= self.max_in_flight or (self._version == seen_version and not heartbeat_due) \
                        or self._pending is None:
                    self._cond.wait(timeout=0.2)
                    continue
                snapshot, seen_version = self._pending, self._version
                full = not sent or self._resync
            bands = Bands(self.deadband_percent, snapshot.get("resources"))
            changed = {}
            for name in SECTIONS:
                if full or (name == "resources" and heartbeat_due) or \
                        deadband.changed(name, snapshot[name], sent.get(name), bands):
                    changed[name] = sent[name] = snapshot[name]
            if not changed and not heartbeat_due:
                continue
            with self._cond:
                self._resync = False
                self._sequence += 1
                sequence = self._sequence
            if heartbeat_due and set(changed) <= {"resources"}:
                self.stats.heartbeats += 1
            last_send = time.monotonic()
            self.stats.sent += 1
            yield pb.NodeReport(node_name=self.node_name, agent_epoch=self.epoch, sequence=sequence,
                                timestamp_unix_ms=int(time.time() * 1000), full=full, **changed)
