"""Feeding the agents' latest reports into the scheduler's cache, once per cycle.

Only reports that changed since the last cycle are converted (the store hands out a copy of
those alone), so 5,000 agents reporting on change plus a heartbeat cost little per cycle.
Staleness is the scheduling core's business: it compares each report's time with the
session's clock (see central.framework.agentview).
"""

from __future__ import annotations

from central.agents.nodedata import to_node_data
from central.agents.store import NodeReportStore
from central.model.cache import ClusterCache


class NodeDataFeed:
    def __init__(self, store: NodeReportStore):
        self.store = store
        self._seen: dict[str, tuple[str, int]] = {}  # node -> (agent epoch, sequence) last fed

    def sync(self, cache: ClusterCache) -> int:
        """Put every report that changed into the cache; returns how many."""
        changed = self.store.reports_since(self._seen)
        for report in changed:
            cache.set_node_data(to_node_data(report))
            self._seen[report.node_name] = (report.agent_epoch, report.sequence)
        return len(changed)
