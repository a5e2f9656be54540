"""binpack: prefer the nodes that the task fills most, per resource weight.

Arguments: binpack.weight (1), binpack.cpu (1), binpack.memory (1), binpack.resources (a
comma-separated list of extra resources) and binpack.resources.<name> (1 each). For every
resource the task requests that has a weight: s = weight x (used + request) / allocatable;
a node where used + request exceeds allocatable scores 0. Score = sum(s) / sum(weights) x
100 x binpack.weight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.rowstate import RowState
from central.model.nodetable import row_any, row_sum
from central.model.objects import TaskInfo
from central.resources.vectors import EPSILON

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

MAX_SCORE = 100


def resource_weights(args: Arguments, prefix: str) -> dict[str, int]:
    """`<prefix>.cpu`, `<prefix>.memory` (1 each), and `<prefix>.resources.<name>` (1) for every
    name in the comma-separated `<prefix>.resources`; the network-topology plugin reads its
    HyperNode binpacking weights the same way under `hypernode.binpack`."""
    weights = {"cpu": args.get(f"{prefix}.cpu", 1, int), "memory": args.get(f"{prefix}.memory", 1, int)}
    keys = {"cpu": f"{prefix}.cpu", "memory": f"{prefix}.memory"}
    for name in (r.strip() for r in args.get(f"{prefix}.resources", "", str).split(",") if r.strip()):
        keys[name] = f"{prefix}.resources.{name}"
        weights[name] = args.get(keys[name], 1, int)
    for name, w in weights.items():
        if w < 0:
            raise args.error(keys[name], f"must not be negative, got {w}")
    return weights

class Binpack(Plugin, ext.NodeOrder):
    name = "binpack"
    rows_by_table = True  # used and allocatable, from the table

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[int, dict[str, int]]:
        """binpack.weight, and the weight of each resource by name."""
        return args.get("binpack.weight", 1, int), resource_weights(args, "binpack")

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.weight, weights = self.settings
        self.weights = handle.dims.vector(weights)  # resources the cluster lacks weigh nothing
        self._columns: dict[int, tuple[Any, ...]] = {}  # id(request) -> (request, its columns, ... on them)

    def batchable(self, task: TaskInfo) -> bool:
        return True  # used and allocatable, from the table

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        return self.node_order_on(task, RowState(self.handle.table, rows))

    def node_order_on(self, task: TaskInfo, state: RowState) -> np.ndarray:
        if not self.weight:
            return np.zeros(len(state))
        req = task.resreq
        found = self._columns.get(id(req))
        if found is None:  # per request vector (one per template, kept by the cache)
            cols = np.flatnonzero((req > EPSILON) & (self.weights > 0))
            found = self._columns[id(req)] = (req, cols, req[cols], self.weights[cols], self.weights[cols].sum())
        _, cols, need, w, total = found
        if not len(cols):
            return np.zeros(len(state))
        alloc = state.block("alloc", cols)
        after = state.block("used", cols) + need
        has = alloc > 0
        per = (w * after) / alloc if np.count_nonzero(has) == has.size else np.divide(w * after, alloc, out=np.zeros_like(after), where=has)
        over = row_any(after > alloc + EPSILON)
        score = row_sum(per) / total * MAX_SCORE * self.weight
        return np.where(over, 0.0, score)
