"""Where a task can go and where it should go, computed over all nodes at once.

1. Resource fit: the task's kube-scheduler request (init containers included) must fit the
   node's future idle (idle + releasing - pipelined) on cpu, memory and every scalar it asks
   for, and the node must have room for one more pod. This is Volcano allocate's built-in
   check, and it runs first.
2. Plugin predicates (all must pass), each narrowing the candidate rows.
3. Gradients: nodes where the request fits idle now come first; only when there are none do
   nodes where it fits only future idle count (the task is then pipelined, not bound).
4. Scores from every node_order plugin are summed; the highest wins, ties going to the node
   listed first (Volcano breaks ties at random; a fixed rule keeps dry runs reproducible).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.api.resources import EPSILON
from central.model.objects import FitErrors, TaskInfo

if TYPE_CHECKING:
    from central.framework.session import Session


class Placement:
    def __init__(self, ssn: "Session"):
        self.ssn = ssn
        self.table = ssn.cache.table
        self.n = len(ssn.nodes)
        self._cols: dict[int, np.ndarray] = {}

    def columns(self, req: np.ndarray) -> np.ndarray:
        """Dimensions checked for a request: cpu and memory always, scalars only when asked for."""
        key = id(req)
        cols = self._cols.get(key)
        if cols is None:
            wanted = req > EPSILON
            wanted[:2] = True
            cols = self._cols[key] = np.flatnonzero(wanted)
        return cols

    def resource_fit(self, task: TaskInfo) -> np.ndarray:
        req = task.init_resreq
        cols = self.columns(req)
        n = self.n
        fits = np.all(self.table.future[:n, cols] + EPSILON > req[cols], axis=1)
        fits &= self.table.pods[:n] < self.table.max_pods[:n]
        return fits

    def feasible(self, task: TaskInfo) -> np.ndarray:
        """Rows of the nodes that pass every filter."""
        rows = np.flatnonzero(self.resource_fit(task))
        for fn in self.ssn.points.flat["predicate"]:
            if not len(rows):
                break
            checks = fn(task, rows)  # every mask is over the same `rows`
            if checks:
                rows = rows[np.logical_and.reduce([ok for ok, _ in checks])]
        return rows

    def fit_errors(self, task: TaskInfo) -> FitErrors:
        """Why no node passes: the first failing filter per node, counted like kube-scheduler."""
        errors = FitErrors(self.n)
        req, n, table = task.init_resreq, self.n, self.table
        cols = self.columns(req)
        short = table.future[:n, cols] + EPSILON <= req[cols]
        for j, col in enumerate(cols):
            errors.add(f"Insufficient {self.ssn.dims.names[col]}", int(short[:, j].sum()))
        errors.add("Too many pods", int((table.pods[:n] >= table.max_pods[:n]).sum()))
        rows = np.flatnonzero(self.resource_fit(task))
        for fn in self.ssn.points.flat["predicate"]:
            alive = np.ones(len(rows), dtype=bool)
            for ok, reason in fn(task, rows):
                errors.add(reason, int((alive & ~ok).sum()))
                alive &= ok
            rows = rows[alive]
        return errors

    def select(self, task: TaskInfo, rows: np.ndarray) -> tuple[int, bool]:
        """(best row, True if the task fits the node's idle now) among feasible `rows`."""
        req = task.init_resreq
        cols = self.columns(req)
        nominated = self.ssn.cache.nodes.get(task.nominated_node) if task.nominated_node else None
        idle_ok = np.all(self.table.idle[rows][:, cols] + EPSILON > req[cols], axis=1)
        if nominated is not None:
            hit = np.flatnonzero(rows == nominated.index)
            if len(hit):
                return nominated.index, bool(idle_ok[hit[0]])
        fits_idle = bool(idle_ok.any())
        gradient = rows[idle_ok] if fits_idle else rows
        if len(gradient) == 1:
            return int(gradient[0]), fits_idle
        scores = self.scores(task, gradient)
        return int(gradient[int(np.argmax(scores))]), fits_idle

    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        total = np.zeros(len(rows))
        for fn in self.ssn.points.flat["node_order"]:
            total += fn(task, rows)
        return total
