"""Counts what went wrong without stopping the agent.

Every collector and every cgroup write reports here; the exporter turns the counters into
`nodeagent_collector_errors_total` and friends. Counters are keyed by a small fixed set of
names (collector, reason), so the series count stays bounded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

log = logging.getLogger("nodeagent")


class Health:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.errors: Counter[tuple[str, str]] = Counter()
        self.last_success: dict[str, float] = {}

    def error(self, collector: str, reason: str, detail: object = "") -> None:
        """Log and count one failure; `reason` must come from a small fixed vocabulary."""
        with self._lock:
            first = self.errors[(collector, reason)] == 0
            self.errors[(collector, reason)] += 1
        # The first occurrence is a warning, repeats are debug: no log spam every period.
        log.log(logging.WARNING if first else logging.DEBUG, "%s: %s: %s", collector, reason, detail)

    def ok(self, collector: str) -> None:
        self.last_success[collector] = time.time()

    def error_count(self, collector: str | None = None) -> int:
        with self._lock:
            return sum(n for (c, _), n in self.errors.items() if collector in (None, c))
