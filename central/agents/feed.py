"""Feeding the agents' latest reports into the scheduler's cache, once per cycle.

Only reports that changed since the last cycle are converted (the store hands out a copy of
those alone), so 5,000 agents reporting on change plus a heartbeat cost little per cycle.
Staleness is the scheduling core's business: it compares each report's time with the
session's clock (see central.framework.agentview).

A report is untrusted input: it reaches the cache only once `central.agents.bounds` has held
it against its Node. One that fails is refused for its node alone: the cache drops what that
agent said before and each session faults the node (a Warning Event, the fault metric, no
placement there) until the agent sends a report that fits; every other node keeps
scheduling. A report for a node the cache does not know yet waits until the Node arrives,
since there is nothing to hold it against.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Callable

from central.agents.bounds import checked_node_data
from central.agents.store import NodeReportStore
from central.errors import InputError
from central.model.cache import ClusterCache

log = logging.getLogger("central.agents")


class NodeDataFeed:
    def __init__(self, store: NodeReportStore, clock: Callable[[], float] = time.time):
        self.store = store
        self.clock = clock  # seconds since the epoch: how far ahead a report's time may run
        self._seen: dict[str, tuple[str, int]] = {}  # node -> (agent epoch, sequence) last fed

    def anew(self) -> NodeDataFeed:
        """A feed of the same store that has fed nothing yet: for a fresh cache."""
        return NodeDataFeed(self.store, self.clock)

    def sync(self, cache: ClusterCache) -> int:
        """Put every report that changed into the cache (refused ones as refusals); returns how
        many were taken either way."""
        now = datetime.fromtimestamp(self.clock(), tz=timezone.utc)
        taken = 0
        for report in self.store.reports_since(self._seen):
            node = cache.nodes.get(report.node_name)
            if node is None:
                continue
            try:
                cache.set_node_data(checked_node_data(report, node, now))
            except InputError as err:
                if cache.node_data_faults.get(report.node_name) != str(err):
                    log.warning("agent report refused: %s", err)
                cache.refuse_node_data(report.node_name, str(err))
            self._seen[report.node_name] = (report.agent_epoch, report.sequence)
            taken += 1
        return taken
