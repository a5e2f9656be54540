"""binpack: prefer the nodes that the task fills most, per resource weight.

Arguments: binpack.weight (1), binpack.cpu (1), binpack.memory (1), binpack.resources (a
comma-separated list of extra resources) and binpack.resources.<name> (1 each). For every
resource the task requests that has a weight: s = weight x (used + request) / allocatable;
a node where used + request exceeds allocatable scores 0. Score = sum(s) / sum(weights) x
100 x binpack.weight.
"""

from __future__ import annotations

import numpy as np

from central.api.resources import EPSILON
from central.framework.plugin import Arguments, Plugin
from central.model.objects import TaskInfo

MAX_SCORE = 100


class Binpack(Plugin):
    name = "binpack"

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[int, dict[str, int]]:
        """binpack.weight, and the weight of each resource by name."""
        weights = {"cpu": args.get("binpack.cpu", 1, int), "memory": args.get("binpack.memory", 1, int)}
        extra = args.get("binpack.resources", "", str)
        for name in (r.strip() for r in extra.split(",") if r.strip()):
            weights[name] = args.get(f"binpack.resources.{name}", 1, int)
        for name, w in weights.items():
            if w < 0:
                raise args.error(f"binpack.{name}", f"must not be negative, got {w}")
        return args.get("binpack.weight", 1, int), weights

    def __init__(self, option, session):
        super().__init__(option, session)
        self.weight, weights = self.settings
        index = session.dims.index
        self.weights = np.zeros(len(session.dims))
        for name, w in weights.items():
            if name in index:
                self.weights[index[name]] = w

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        if not self.weight:
            return np.zeros(len(rows))
        req = task.resreq
        cols = np.flatnonzero((req > EPSILON) & (self.weights > 0))
        if not len(cols):
            return np.zeros(len(rows))
        table = self.session.table
        alloc = table.alloc[rows][:, cols]
        after = table.used[rows][:, cols] + req[cols]
        w = self.weights[cols]
        per = np.divide(w * after, alloc, out=np.zeros_like(after), where=alloc > 0)
        over = np.any(after > alloc + EPSILON, axis=1)
        score = per.sum(axis=1) / w.sum() * MAX_SCORE * self.weight
        return np.where(over, 0.0, score)
