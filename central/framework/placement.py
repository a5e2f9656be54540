"""Where a task can go and where it should go, computed over all nodes at once.

1. Resource fit: the task's effective request (init containers included, the same figure
   the node is charged: see `central.model.podspec.pod_requests`) must fit the node's future
   idle (idle + releasing - pipelined) on cpu, memory and every scalar it asks for, and the
   node must have room for one more pod. This is Volcano allocate's built-in
   check, and it runs first, with the template-only and row-local filters of the plugins.
2. Plugin predicates (all must pass), each narrowing the candidate rows.
3. Gradients: nodes where the request fits idle now come first; only when there are none do
   nodes where it fits only future idle count (the task is then pipelined, not bound).
4. Scores from every node_order and batch_node_order plugin are summed; the highest wins,
   ties going to the node listed first (Volcano breaks ties at random; a fixed rule keeps dry
   runs reproducible).

Pods of one template (one Volcano task) ask the same question again and again, so each
template keeps a `TemplateView`: its fit masks and row-local scores over all nodes, brought
up to date by re-checking only the rows written since it last looked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.api.resources import EPSILON
from central.model.objects import FitErrors, PodTemplate, TaskInfo

EXCLUDED = "node(s) had data the scheduler could not read (see the Node's events)"

if TYPE_CHECKING:
    from central.framework.session import Session


class TemplateView:
    __slots__ = ("position", "static", "allowed", "fits_future", "fits_idle", "score")

    def __init__(self, n: int, static: list[tuple[np.ndarray, str]]):
        self.position = 0
        self.static = static  # template-only filters, with their reasons
        self.allowed = np.logical_and.reduce([ok for ok, _ in static]) if static else np.ones(n, dtype=bool)
        self.fits_future = np.zeros(n, dtype=bool)  # allowed, and the request fits future idle
        self.fits_idle = np.zeros(n, dtype=bool)
        self.score = np.zeros(n)


class Placement:
    def __init__(self, ssn: "Session"):
        self.ssn = ssn
        self.table = ssn.cache.table
        self.table.changes.clear()  # positions in the change log are per session
        self.n = len(ssn.nodes)
        self._cols: dict[int, np.ndarray] = {}
        self._views: dict[PodTemplate, TemplateView] = {}
        self.usable = np.ones(self.n, dtype=bool)  # False: the node was faulted this session
        self.excluding = False

    def exclude(self, row: int) -> None:
        """Take a node out of placement for the rest of the session (a fault boundary)."""
        self.usable[row] = False
        self.excluding = True
        for view in self._views.values():
            if not any(ok is self.usable for ok, _ in view.static):
                view.static.append((self.usable, EXCLUDED))
            view.allowed[row] = False
        self.table.touch(row)

    def columns(self, req: np.ndarray) -> np.ndarray:
        """Dimensions checked for a request: cpu and memory always, scalars only when asked for."""
        key = id(req)
        cols = self._cols.get(key)
        if cols is None:
            wanted = req > EPSILON
            wanted[:2] = True
            cols = self._cols[key] = np.flatnonzero(wanted)
        return cols

    def view(self, task: TaskInfo) -> TemplateView:
        """The task's template view, current as of now."""
        view = self._views.get(task.template)
        changes = self.table.changes
        if view is None:
            static = [check for fn in self.ssn.points.flat["static_predicate"] for check in fn(task.template)]
            if self.excluding:
                static.append((self.usable, EXCLUDED))
            view = self._views[task.template] = TemplateView(self.n, static)
            self._refresh(task, view, np.arange(self.n))
        elif view.position < len(changes):
            dirty = self.table.changed_since(view.position)
            self._refresh(task, view, dirty if len(dirty) < self.n // 4 else np.arange(self.n))
        view.position = len(changes)
        return view

    def _refresh(self, task: TaskInfo, view: TemplateView, rows: np.ndarray) -> None:
        req, table = task.resreq, self.table
        cols = self.columns(req)
        room = table.pods[rows] < table.max_pods[rows]
        fits = np.all(table.future[rows][:, cols] + EPSILON > req[cols], axis=1) & room & view.allowed[rows]
        for fn in self.ssn.points.flat["row_predicate"]:
            for ok, _ in fn(task, rows):
                fits &= ok
        view.fits_future[rows] = fits
        view.fits_idle[rows] = np.all(table.idle[rows][:, cols] + EPSILON > req[cols], axis=1) & room
        score = np.zeros(len(rows))
        for fn in self.ssn.points.flat["node_order"]:
            score += fn(task, rows)
        view.score[rows] = score

    def feasible(self, task: TaskInfo) -> np.ndarray:
        """Rows of the nodes that pass every filter."""
        rows = np.flatnonzero(self.view(task).fits_future)
        for fn in self.ssn.points.flat["predicate"]:
            if not len(rows):
                break
            checks = fn(task, rows)  # every mask is over the same `rows`
            if checks:
                rows = rows[np.logical_and.reduce([ok for ok, _ in checks])]
        return rows

    def preemption_candidates(self, task: TaskInfo) -> np.ndarray:
        """Rows that pass every plugin filter, whatever their free resources, best score first:
        the nodes where evicting someone could make room (Volcano's PredicateForPreemptAction)."""
        view = self.view(task)
        req, n = task.resreq, self.n
        cols = self.columns(req)
        # A node could make room only if evicting everything on it would: future idle + used.
        could = np.all(self.table.future[:n, cols] + self.table.used[:n, cols] + EPSILON > req[cols], axis=1)
        rows = np.flatnonzero(could & view.allowed)
        for fn in self.ssn.points.flat["row_predicate"]:
            checks = fn(task, rows)  # every mask is over the same `rows`
            if checks:
                rows = rows[np.logical_and.reduce([ok for ok, _ in checks])]
        for fn in self.ssn.points.flat["predicate"]:
            checks = fn(task, rows)
            if checks and len(rows):
                rows = rows[np.logical_and.reduce([ok for ok, _ in checks])]
        scores = view.score[rows]
        for fn in self.ssn.points.flat["batch_node_order"]:
            extra = fn(task, rows)
            if extra is not None:
                scores = scores + extra
        return rows[np.argsort(-scores, kind="stable")]

    def fits(self, task: TaskInfo, row: int, freed: np.ndarray | None = None) -> bool:
        """Does the task fit the node's future idle (with `freed` more resources, if given)?"""
        req = task.resreq
        cols = self.columns(req)
        future = self.table.future[row, cols] if freed is None else self.table.future[row, cols] + freed[cols]
        return bool(np.all(future + EPSILON > req[cols]))

    def fit_errors(self, task: TaskInfo) -> FitErrors:
        """Why no node passes: the first failing filter per node, counted like kube-scheduler."""
        errors = FitErrors(self.n)
        req, n, table = task.resreq, self.n, self.table
        cols = self.columns(req)
        short = table.future[:n, cols] + EPSILON <= req[cols]
        for j, col in enumerate(cols):
            errors.add(f"Insufficient {self.ssn.dims.names[col]}", int(short[:, j].sum()))
        errors.add("Too many pods", int((table.pods[:n] >= table.max_pods[:n]).sum()))
        view = self.view(task)
        room = np.all(table.future[:n, cols] + EPSILON > req[cols], axis=1) & (table.pods[:n] < table.max_pods[:n])
        alive = room.copy()
        for ok, reason in view.static:
            errors.add(reason, int((alive & ~ok).sum()))
            alive &= ok
        everywhere = np.arange(n)
        for fn in self.ssn.points.flat["row_predicate"]:
            for ok, reason in fn(task, everywhere):
                errors.add(reason, int((alive & ~ok).sum()))
                alive &= ok
        rows = np.flatnonzero(view.fits_future)
        for fn in self.ssn.points.flat["predicate"]:
            alive = np.ones(len(rows), dtype=bool)
            for ok, reason in fn(task, rows):
                errors.add(reason, int((alive & ~ok).sum()))
                alive &= ok
            rows = rows[alive]
        return errors

    def select(self, task: TaskInfo, rows: np.ndarray) -> tuple[int, bool]:
        """(best row, True if the task fits the node's idle now) among feasible `rows`."""
        view = self.view(task)
        idle_ok = view.fits_idle[rows]
        nominated = self.ssn.cache.nodes.get(task.nominated_node) if task.nominated_node else None
        if nominated is not None:
            hit = np.flatnonzero(rows == nominated.index)
            if len(hit):
                return nominated.index, bool(idle_ok[hit[0]])
        fits_idle = bool(idle_ok.any())
        gradient = rows[idle_ok] if fits_idle else rows
        if len(gradient) == 1:
            return int(gradient[0]), fits_idle
        scores = view.score[gradient]
        for fn in self.ssn.points.flat["batch_node_order"]:
            extra = fn(task, gradient)
            if extra is not None:
                scores = scores + extra
        return int(gradient[int(np.argmax(scores))]), fits_idle
