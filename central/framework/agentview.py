"""The agents' reports laid out over node rows for one session.

Only fresh reports count: a report older than `STALE_AFTER` is treated as no report, so a
silent agent can neither attract nor repel work with old figures. `silent` names the nodes
whose agent once reported and then went quiet, for the why-pending reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import numpy as np

from central.model.nodedata import NodeData
from central.model.objects import NodeInfo

STALE_AFTER = timedelta(seconds=60)


class AgentView:
    def __init__(self, nodes: Sequence[NodeInfo], reports: Mapping[str, NodeData], now: datetime):
        n = len(nodes)
        self.data: list[NodeData | None] = [None] * n
        self.fresh = np.zeros(n, dtype=bool)
        self.silent = np.zeros(n, dtype=bool)
        self.cpu_usage = np.zeros(n)  # millicores; 0 where unknown
        self.memory_usage = np.zeros(n)
        limit = STALE_AFTER.total_seconds()
        for node in nodes:
            data = reports.get(node.name)
            if data is None:
                continue
            if data.age(now) > limit:
                self.silent[node.index] = True
                continue
            row = node.index
            self.data[row] = data
            self.fresh[row] = True
            self.cpu_usage[row] = data.cpu_usage or 0.0
            self.memory_usage[row] = data.memory_usage or 0.0
        self.has_usage = self.fresh & np.array([d is not None and d.cpu_usage is not None for d in self.data], dtype=bool)
