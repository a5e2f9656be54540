"""Where a task can go and where it should go, computed over all nodes at once.

One filter chain, in kube-scheduler's order, gives every node a status (see
`central.framework.status`): it fits, it is unschedulable (evicting pods there could help),
or it is unresolvable.
1. Template filters of the plugins (`static_predicate`: unschedulable nodes, selectors,
   affinity, taints), computed once per template per session.
2. Resource fit: the task's effective request (init containers included, the same figure
   the node is charged: see `central.model.podspec.pod_requests`) against the node's future
   idle (idle + releasing - pipelined) on cpu, memory and every scalar it asks for, and a
   free pod slot (pods on the node less those releasing, against its `pods`).
   Short is unschedulable, unless the node could not offer the request even with every pod
   on it gone: that is unresolvable.
3. Row-local filters of the plugins (`row_predicate`: usage thresholds).
4. Plugin predicates (`predicate`), which depend on what is placed where; they run only on
   the rows still in play.
Allocate and backfill take the nodes that fit; preempt and reclaim take every node that is
not unresolvable; why-pending counts the first failing step per node, all from this chain.

Then gradients: nodes where the request fits idle now come first; only when there are none
do nodes where it fits only future idle count (the task is then pipelined, not bound).
Scores from every node_order and batch_node_order plugin are summed; the highest wins, ties
going to the node listed first (Volcano breaks ties at random; a fixed rule keeps dry runs
reproducible).

Pods of one template (one Volcano task) ask the same question again and again, so each
template keeps a `TemplateView`: the status of steps 1-3 and the row-local scores over all
nodes, brought up to date by re-checking only the rows written since it last looked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from central.api.resources import EPSILON
from central.framework.status import Check, Code, fold, sliced
from central.model.objects import FitErrors, PodTemplate, TaskInfo

if TYPE_CHECKING:
    from central.framework.session import Session

_UNSCHEDULABLE, _UNRESOLVABLE = np.int8(Code.UNSCHEDULABLE), np.int8(Code.UNRESOLVABLE)
EXCLUDED = "node(s) had data the scheduler could not read (see the Node's events)"


class TemplateView:
    __slots__ = ("position", "static", "static_code", "code", "fits_idle", "score")

    def __init__(self, n: int, static: list[Check]):
        self.position = 0
        self.static = static  # step 1, over all rows
        self.static_code = fold(np.zeros(n, dtype=np.int8), static)
        self.code = np.zeros(n, dtype=np.int8)  # worst status of steps 1-3 per row
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
        """Take a node out of placement for the rest of the session (a fault boundary):
        unresolvable for every template from now on."""
        self.usable[row] = False
        self.excluding = True
        for view in self._views.values():
            if not any(check.ok is self.usable for check in view.static):
                view.static.append(Check(self.usable, EXCLUDED))
            view.static_code[row] = _UNRESOLVABLE
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
                static.append(Check(self.usable, EXCLUDED))
            view = self._views[task.template] = TemplateView(self.n, static)
            self._refresh(task, view, np.arange(self.n))
        elif view.position < len(changes):
            dirty = self.table.changed_since(view.position)
            self._refresh(task, view, dirty if len(dirty) < self.n // 4 else np.arange(self.n))
        view.position = len(changes)
        return view

    # --- the chain --------------------------------------------------------------------------

    def _cached_steps(self, task: TaskInfo, view: TemplateView, rows: np.ndarray,
                      static: bool = True) -> Iterator[list[Check]]:
        """Steps 1-3 over `rows`, one list of checks per step (step 1 left out when not
        `static`: its codes are kept folded in the view)."""
        if static:
            yield [sliced(check, rows) for check in view.static]
        yield self._resource_checks(task, rows)
        for fn in self.ssn.points.flat["row_predicate"]:
            yield fn(task, rows)

    def _resource_checks(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        req, table = task.resreq, self.table
        cols = self.columns(req)
        need = req[cols]
        short = table.future[rows][:, cols] + EPSILON <= need
        checks = []
        if short.any():
            never = table.alloc[rows][:, cols] - table.pipelined[rows][:, cols] + EPSILON <= need
            names = self.ssn.dims.names
            for j in np.flatnonzero(short.any(axis=0)):
                checks.append(Check(~short[:, j], f"Insufficient {names[cols[j]]}",
                                    np.where(never[:, j], _UNRESOLVABLE, _UNSCHEDULABLE)))
        slots = table.pods[rows] - table.releasing_pods[rows] < table.max_pods[rows]
        if not slots.all():
            checks.append(Check(slots, "Too many pods",
                                np.where(table.max_pods[rows] > 0, _UNSCHEDULABLE, _UNRESOLVABLE)))
        return checks

    def _refresh(self, task: TaskInfo, view: TemplateView, rows: np.ndarray) -> None:
        codes = view.static_code[rows]
        for checks in self._cached_steps(task, view, rows, static=False):
            fold(codes, checks)
        view.code[rows] = codes
        req, table = task.resreq, self.table
        cols = self.columns(req)
        view.fits_idle[rows] = (np.all(table.idle[rows][:, cols] + EPSILON > req[cols], axis=1)
                                & (table.pods[rows] < table.max_pods[rows]))
        score = np.zeros(len(rows))
        for fn in self.ssn.points.flat["node_order"]:
            score += fn(task, rows)
        view.score[rows] = score

    def _predicates(self, task: TaskInfo, rows: np.ndarray, codes: np.ndarray, limit: Code) -> np.ndarray:
        """Step 4 on `rows` (their codes so far): the rows whose status stays within `limit`."""
        for fn in self.ssn.points.flat["predicate"]:
            if not len(rows):
                break
            checks = fn(task, rows)  # every mask is over the same `rows`
            if checks:
                fold(codes, checks)
                keep = codes <= limit
                rows, codes = rows[keep], codes[keep]
        return rows

    # --- what the actions ask ---------------------------------------------------------------

    def feasible(self, task: TaskInfo) -> np.ndarray:
        """Rows of the nodes the task fits."""
        rows = np.flatnonzero(self.view(task).code == Code.FITS)
        return self._predicates(task, rows, np.zeros(len(rows), dtype=np.int8), Code.FITS)

    def fits(self, task: TaskInfo, row: int) -> bool:
        """Does the task fit this node now (after evictions, say)? The whole chain on one row,
        without re-scoring it."""
        view = self._views.get(task.template) or self.view(task)
        rows = np.array([row])
        codes = view.static_code[rows]
        for checks in self._cached_steps(task, view, rows, static=False):
            fold(codes, checks)
        return not codes[0] and len(self._predicates(task, rows, codes, Code.FITS)) == 1

    def preemption_candidates(self, task: TaskInfo) -> np.ndarray:
        """Rows that are not unresolvable, best score first: the nodes where evicting someone
        could make room (Volcano's PredicateForPreemptAction)."""
        view = self.view(task)
        rows = np.flatnonzero(view.code <= Code.UNSCHEDULABLE)
        rows = self._predicates(task, rows, view.code[rows].copy(), Code.UNSCHEDULABLE)
        scores = view.score[rows]
        for fn in self.ssn.points.flat["batch_node_order"]:
            extra = fn(task, rows)
            if extra is not None:
                scores = scores + extra
        return rows[np.argsort(-scores, kind="stable")]

    def room_after(self, task: TaskInfo, row: int, freed: np.ndarray, pods: int) -> bool:
        """Would the request and a pod slot fit the node's future idle once `freed` resources
        and `pods` pod slots are given back? A bound checked before choosing victims."""
        req, table = task.resreq, self.table
        cols = self.columns(req)
        if not np.all(table.future[row, cols] + freed[cols] + EPSILON > req[cols]):
            return False
        return bool(table.pods[row] - table.releasing_pods[row] - pods < table.max_pods[row])

    def fit_errors(self, task: TaskInfo, within: np.ndarray | None = None) -> FitErrors:
        """Why the task fits no node (of the row mask `within`, if given): per node, the
        reasons of the first step that fails it, counted like kube-scheduler's FitError."""
        alive = np.ones(self.n, dtype=bool) if within is None else within[: self.n].copy()
        errors = FitErrors(int(alive.sum()))
        view = self.view(task)
        rows = np.arange(self.n)
        for checks in self._cached_steps(task, view, rows):
            failed = np.zeros(self.n, dtype=bool)
            for check in checks:
                errors.add(check.reason, int((alive & ~check.ok).sum()))
                failed |= ~check.ok
            alive &= ~failed
        rows = np.flatnonzero(alive)
        for fn in self.ssn.points.flat["predicate"]:
            if not len(rows):
                break
            passed = np.ones(len(rows), dtype=bool)
            for check in fn(task, rows):
                errors.add(check.reason, int((passed & ~check.ok).sum()))
                passed &= check.ok
            rows = rows[passed]
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
