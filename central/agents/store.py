"""Latest report per node, merged from a full report and the section deltas that follow.

A node is fresh while its last report (a heartbeat counts) is younger than `stale_after_s`;
the scheduler should read only fresh nodes, since stale load figures mislead placement
(Koordinator #1721). The clock is injectable so staleness is tested without sleeping.
Thread-safe: the gRPC loop writes while the scheduler reads.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from nodeagent.api.v1 import agent_pb2 as pb

SECTIONS = ("resources", "topology", "gpus", "pods", "qos")


@dataclass
class _Entry:
    report: pb.NodeReport
    epoch: str
    received_at: float


class StaleDelta(Exception):
    """A delta for a node (or agent run) whose full report this store never saw."""


class NodeReportStore:
    def __init__(self, stale_after_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_after_s = stale_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def apply(self, report: pb.NodeReport) -> None:
        """Merges one report; raises StaleDelta when a delta has no full report to apply to."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(report.node_name)
            if report.full:
                merged = pb.NodeReport()
                merged.CopyFrom(report)
                self._entries[report.node_name] = _Entry(merged, report.agent_epoch, now)
                return
            if entry is None or entry.epoch != report.agent_epoch:
                raise StaleDelta(report.node_name)
            for name in SECTIONS:
                if report.HasField(name):
                    getattr(entry.report, name).CopyFrom(getattr(report, name))
            entry.report.sequence = report.sequence
            entry.report.timestamp_unix_ms = report.timestamp_unix_ms
            entry.received_at = now

    def _fresh(self, entry: _Entry, now: float) -> bool:
        return now - entry.received_at <= self.stale_after_s

    def latest(self, node: str, include_stale: bool = False) -> pb.NodeReport | None:
        """A copy of the node's merged report; None when unknown or (by default) stale."""
        with self._lock:
            entry = self._entries.get(node)
            if entry is None or not (include_stale or self._fresh(entry, self._clock())):
                return None
            copy = pb.NodeReport()
            copy.CopyFrom(entry.report)
            return copy

    def reports_since(self, seen: dict[str, tuple[str, int]]) -> list[pb.NodeReport]:
        """Copies of the merged reports whose (agent epoch, sequence) differ from `seen`:
        what changed since a reader last looked, stale ones included."""
        with self._lock:
            changed = [e.report for name, e in self._entries.items()
                       if seen.get(name) != (e.report.agent_epoch, e.report.sequence)]
            out = []
            for report in changed:
                copy = pb.NodeReport()
                copy.CopyFrom(report)
                out.append(copy)
            return out

    def fresh_nodes(self) -> list[str]:
        now = self._clock()
        with self._lock:
            return sorted(n for n, e in self._entries.items() if self._fresh(e, now))

    def stale_nodes(self) -> list[str]:
        now = self._clock()
        with self._lock:
            return sorted(n for n, e in self._entries.items() if not self._fresh(e, now))

    def forget(self, node: str) -> None:
        with self._lock:
            self._entries.pop(node, None)
