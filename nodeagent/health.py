"""Counts what went wrong without stopping the agent.

Every collector and every cgroup write reports here; the exporter turns the counters into
`nodeagent_collector_errors_total` and friends. Counters are keyed by a small fixed set of
names (collector, reason), so the series count stays bounded. A collector is failing from its
first error until its next success; /readyz fails while an essential one is.
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
        self.failing: dict[str, str] = {}  # collector -> reason of its latest error since its last success

    def error(self, collector: str, reason: str, detail: object = "") -> None:
        """Log and count one failure; `reason` must come from a small fixed vocabulary."""
        with self._lock:
            first = self.errors[(collector, reason)] == 0
            self.errors[(collector, reason)] += 1
            self.failing[collector] = reason
        # The first occurrence is a warning, repeats are debug: no log spam every period.
        log.log(logging.WARNING if first else logging.DEBUG, "%s: %s: %s", collector, reason, detail)

    def ok(self, collector: str) -> None:
        with self._lock:
            self.last_success[collector] = time.time()
            self.failing.pop(collector, None)

    def error_count(self, collector: str | None = None) -> int:
        with self._lock:
            return sum(n for (c, _), n in self.errors.items() if collector in (None, c))
