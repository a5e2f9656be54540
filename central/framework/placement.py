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
nodes, brought up to date by re-checking only the rows written since it last looked. Where
those answers read only a template's shape (request, node selection, tolerations), the node
index and the table (`Plugin.rows_by_table`), the templates of one shape share a view (the pods
of different jobs differ in labels: `_shape`), and the views outlive the session
(`Placement.keep`): the next session under the same configuration and node set re-checks
only the rows written since, where it would work out every row of a new view.

Identical pods of one job are placed in batches where that changes nothing (`plan`): when
every plugin taking part in placement finds the pod batchable (see `central.framework.plugin`:
its step-4 answers stay as they are while the pod's twins are placed, it adds no score that
depends on the candidate set, and its row filters and scores read node state only from the
node table), placing a pod changes only its own row's answers. The nodes the next k pods
take one by one can then be worked out at once: only the k best rows can be chosen, and a
row's answers with j more pods on it come from charging the table with j pods for a moment
(the same float operations a real charge makes). Each level j is asked once for all those
rows, so a batch costs a few vectorised calls instead of k full passes. The plan holds only
while the table changes exactly as it foresaw (checked against the change log); anything
else and the next pod goes one by one again.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

import numpy as np

from central.framework.points import Points
from central.framework.rowstate import RowState
from central.framework.status import Check, Code, fold, sliced
from central.model.nodetable import NodeTable, row_all
from central.model.objects import FitErrors, NodeInfo, PodTemplate, TaskInfo
from central.resources.vectors import EPSILON

_UNSCHEDULABLE, _UNRESOLVABLE = np.int8(Code.UNSCHEDULABLE), np.int8(Code.UNRESOLVABLE)
KEPT_VIEW_ROWS = 1 << 21  # views kept across sessions, counted in node rows (about 14 bytes each)
EXCLUDED = "node(s) had data the scheduler could not read (see the Node's events)"
OTHER_SHARD = "node(s) were in another scheduler's shard"


class TemplateView:
    __slots__ = ("position", "static", "static_code", "code", "fits_idle", "score")

    def __init__(self, n: int, static: list[Check]):
        self.position = 0  # the table's `mark` when the view last looked
        self.static = static  # step 1, over all rows
        self.static_code = fold(np.zeros(n, dtype=np.int8), static)
        self.code = np.zeros(n, dtype=np.int8)  # worst status of steps 1-3 per row
        self.fits_idle = np.zeros(n, dtype=bool)
        self.score = np.zeros(n)


def _shape(template: PodTemplate) -> tuple[object, ...]:
    """What the placement's own row answers, and those of plugins that answer `rows_by_table`,
    read of a template: twins of different jobs (other labels, another namespace) share a view."""
    return (template.resreq, template.node_selector, template.required_node_terms, template.preferred_node_terms,
            template.tolerations)


class KeptViews:
    """Template views one session leaves for the next, with what they were worked out under."""

    __slots__ = ("conf", "table", "generation", "n", "views")

    def __init__(self, conf: object, table: NodeTable, generation: int, n: int, views: dict[object, TemplateView]):
        self.conf, self.table, self.generation, self.n, self.views = conf, table, generation, n, views

    def __deepcopy__(self, memo: dict[int, object]) -> None:
        return None  # a copy of the cache (a forward run's) starts without: its table is another object


class Plan:
    """The rows the next pods of one template take, in order, as one-by-one placement
    chooses them (see the module's docstring). `take` hands out the next row only to a pod
    of the template that every judge still finds batchable, and only while the table has
    changed by exactly the pods handed out, each allocated to its row."""

    __slots__ = ("template", "rows", "taken", "changes", "position", "judges")

    def __init__(self, template: PodTemplate, rows: list[int], changes: list[int],
                 judges: list[Callable[[TaskInfo], bool]]):
        self.template = template
        self.rows = rows
        self.taken = 0
        self.changes = changes
        self.position = len(changes)
        self.judges = judges

    def take(self, task: TaskInfo) -> int | None:
        if self.taken >= len(self.rows) or task.template is not self.template or task.nominated_node:
            return None
        changes = self.changes
        expected = self.position + (1 if self.taken else 0)
        if len(changes) != expected or (self.taken and changes[-1] != self.rows[self.taken - 1]) \
                or not all(judge(task) for judge in self.judges):
            del self.rows[self.taken:]  # the plan no longer holds
            return None
        row = self.rows[self.taken]
        self.taken += 1
        self.position = len(changes)
        return row

    def take_more(self, tasks: Sequence[TaskInfo]) -> list[int]:
        """Right after `take` handed out a row, before it is allocated: the rows for the next
        pods, first first, as many as `take` would hand them out one by one (stopping at the
        first it would refuse), the pod before each allocated to its row in between."""
        rows = self.rows[self.taken : self.taken + len(tasks)]
        template, judges = self.template, self.judges
        for i, task in enumerate(tasks[: len(rows)]):
            if task.template is not template or task.nominated_node or not all(judge(task) for judge in judges):
                del rows[i:]
                break
        self.taken += len(rows)
        self.position += len(rows)  # the log the pods handed out will have written, the last one's row last
        return rows


class Placement:
    """The filter chain and the scores over the session's node rows, for the actions."""

    def __init__(self, table: NodeTable, nodes: Sequence[NodeInfo], nodes_by_name: Mapping[str, NodeInfo],
                 dimension_names: Sequence[str]):
        self.table = table
        self.table.clear_changes()  # a plan's positions index the session's log
        self.n = len(nodes)
        self._nodes_by_name = nodes_by_name
        self._names = dimension_names
        self.points: Points  # the session's, set by `use` once its plugins are open
        self._cols: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # id(request) -> columns, need, it
        self._views: dict[object, TemplateView] = {}  # by `_shape`, or by template (see `view`)
        self._by_template: dict[PodTemplate, TemplateView] = {}  # the same views, by the templates asking this session
        self.usable = np.ones(self.n, dtype=bool)  # False: the node was faulted this session
        self._batch_judges: tuple[list[Callable[[TaskInfo], bool]], bool] | None = None  # see _judges
        self.excluding = False
        self.shard: np.ndarray | None = None  # rows this scheduler may place on (its NodeShard); None: all

    def restrict(self, nodes: Sequence[NodeInfo], allowed: Collection[str]) -> None:
        """Place only on the `allowed` nodes this session (a sharded scheduler's own); the
        others stay in the totals and queue shares, unresolvable for every task. Call before
        any task is placed."""
        self.shard = np.fromiter((node.name in allowed for node in nodes), bool, len(nodes))

    def resume(self, kept: KeptViews | None, conf: object, generation: int) -> None:
        """Take up the views a session kept (`keep`), if they were worked out with the same
        configuration and nodes: call before any node is taken out, after `restrict`."""
        if kept is not None and self.shard is None and kept.conf is conf and kept.table is self.table \
                and kept.generation == generation and kept.n == self.n:
            self._views = kept.views

    def keep(self, conf: object, generation: int) -> KeptViews | None:
        """The views, for the next session (`resume`): None where they would not stay true as
        rows are written (a node taken out or a shard: this session's, or answers that read
        more than the node index and table: see `Plugin.rows_by_table`)."""
        if self.excluding or self.shard is not None or not self.points.views_by_table:
            return None
        views = self._views
        room = max(1, KEPT_VIEW_ROWS // max(self.n, 1))
        if len(views) > room:  # the views asked for most lately
            views = dict(sorted(views.items(), key=lambda item: item[1].position)[-room:])
        return KeptViews(conf, self.table, generation, self.n, views)

    def use(self, points: Points) -> None:
        """The plugins' answers to filter and score with (they open after the placement: a
        plugin may fault a node while it opens, which takes the node out of placement)."""
        self.points = points

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
        return self._request(req)[0]

    def _request(self, req: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The columns checked for a request, and the request on them."""
        found = self._cols.get(id(req))
        if found is None or found[2] is not req:  # the request is held, so its id is not reused
            wanted = req > EPSILON
            wanted[:2] = True
            cols = np.flatnonzero(wanted)
            found = self._cols[id(req)] = (cols, req[cols], req)
        return found[0], found[1]

    def view(self, task: TaskInfo) -> TemplateView:
        """The task's template view, current as of now."""
        template = task.template
        view = self._by_template.get(template)
        if view is None:
            key = _shape(template) if self.points.views_by_table else template
            view = self._views.get(key)
            if view is None:
                static = [check for fn in self.points.static_predicate for check in fn(template)]
                if self.excluding:
                    static.append(Check(self.usable, EXCLUDED))
                if self.shard is not None:
                    static.append(Check(self.shard, OTHER_SHARD))
                view = self._views[key] = TemplateView(self.n, static)
                self._refresh(task, view, np.arange(self.n))
                view.position = self.table.mark
            self._by_template[template] = view
        mark = self.table.mark
        if view.position < mark:
            dirty = self.table.changed_since(view.position)
            self._refresh(task, view, dirty if len(dirty) < self.n // 4 else np.arange(self.n))
            view.position = mark
        return view

    # --- the chain --------------------------------------------------------------------------

    def _cached_steps(self, task: TaskInfo, view: TemplateView, rows: np.ndarray,
                      static: bool = True) -> Iterator[list[Check]]:
        """Steps 1-3 over `rows`, one list of checks per step (step 1 left out when not
        `static`: its codes are kept folded in the view)."""
        if static:
            yield [sliced(check, rows) for check in view.static]
        yield self._resource_checks(task, RowState(self.table, rows))
        for fn in self.points.row_predicate:
            yield fn(task, rows)

    def _resource_checks(self, task: TaskInfo, state: RowState) -> list[Check]:
        cols, need = self._request(task.resreq)
        short = state.block("future", cols) + EPSILON <= need
        checks = []
        if np.count_nonzero(short):  # (count_nonzero: a fraction of the cost of any() and all() on few rows)
            never = state.block("alloc", cols) - state.block("pipelined", cols) + EPSILON <= need
            names = self._names
            for j in np.flatnonzero(short.any(axis=0)):
                checks.append(Check(~short[:, j], f"Insufficient {names[cols[j]]}",
                                    np.where(never[:, j], _UNRESOLVABLE, _UNSCHEDULABLE)))
        max_pods = state.full("max_pods")
        slots = state.full("pods") - state.full("releasing_pods") < max_pods
        if np.count_nonzero(slots) < len(slots):
            checks.append(Check(slots, "Too many pods", np.where(max_pods > 0, _UNSCHEDULABLE, _UNRESOLVABLE)))
        return checks

    def _refresh(self, task: TaskInfo, view: TemplateView, rows: np.ndarray) -> None:
        view.code[rows], view.fits_idle[rows], view.score[rows] = self._row_answers(task, view, rows)

    def _row_answers(self, task: TaskInfo, view: TemplateView,
                     rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`_answers` on `rows` as the table stands."""
        return self._answers(task, view, RowState(self.table, rows))

    def _answers(self, task: TaskInfo, view: TemplateView,
                 state: RowState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row of `state`: the status of steps 1-3, whether the request fits idle now,
        and the summed node_order score. A state that is not the table as it stands (see
        `RowState`) needs every plugin's array forms."""
        points, rows = self.points, state.rows
        codes = view.static_code[rows]
        fold(codes, self._resource_checks(task, state))
        checks_on = points.row_predicate_on
        for i, fn in enumerate(points.row_predicate):
            fold(codes, checks_on[i](task, state) if checks_on is not None else fn(task, rows))
        cols, need = self._request(task.resreq)
        fits_idle = row_all(state.block("idle", cols) + EPSILON > need) & (state.full("pods") < state.full("max_pods"))
        score = np.zeros(len(rows))
        scores_on = points.node_order_on
        if scores_on is not None:
            for score_on in scores_on:
                score += score_on(task, state)
        else:
            for score_fn in points.node_order:
                score += score_fn(task, rows)
        return codes, fits_idle, score

    def _predicates(self, task: TaskInfo, rows: np.ndarray, codes: np.ndarray, limit: Code) -> np.ndarray:
        """Step 4 on `rows` (their codes so far): the rows whose status stays within `limit`."""
        for fn in self.points.predicate:
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
        view = self._by_template.get(task.template) or self.view(task)
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
        for fn in self.points.batch_node_order:
            extra = fn(task, rows)
            if extra is not None:
                scores = scores + extra
        return rows[np.argsort(-scores, kind="stable")]

    def room_after(self, task: TaskInfo, row: int, freed: np.ndarray, pods: int) -> bool:
        """Would the request and a pod slot fit the node's future idle once `freed` resources
        and `pods` pod slots are given back? A bound checked before choosing victims."""
        table = self.table
        cols, need = self._request(task.resreq)
        if not np.all(table.future[row, cols] + freed[cols] + EPSILON > need):
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
        for fn in self.points.predicate:
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
        nominated = self._nodes_by_name.get(task.nominated_node) if task.nominated_node else None
        if nominated is not None:
            hit = np.flatnonzero(rows == nominated.index)
            if len(hit):
                return nominated.index, bool(idle_ok[hit[0]])
        fits_idle = bool(idle_ok.any())
        gradient = rows[idle_ok] if fits_idle else rows
        if len(gradient) == 1:
            return int(gradient[0]), fits_idle
        scores = view.score[gradient]
        for fn in self.points.batch_node_order:
            extra = fn(task, gradient)
            if extra is not None:
                scores = scores + extra
        return int(gradient[int(np.argmax(scores))]), fits_idle

    # --- batches of identical pods ----------------------------------------------------------

    def plan(self, task: TaskInfo, count: int, within: np.ndarray | None = None) -> Plan | None:
        """Where `task` and the next `count - 1` pods of its template go, one after the other,
        if each is allocated where one-by-one placement would put it (on the nodes of the row
        mask `within` only, if given); None where that cannot be foreseen row by row (see the
        module's docstring), or nothing fits idle now."""
        judges = self._judges()
        if count < 1 or judges is None or not all(judge(task) for judge in judges):
            return None
        view = self.view(task)
        rows = np.flatnonzero((view.code == Code.FITS) & view.fits_idle if within is None
                              else (view.code == Code.FITS) & view.fits_idle & within)
        rows = self._predicates(task, rows, np.zeros(len(rows), dtype=np.int8), Code.FITS)
        if not len(rows) or any(fn(task, rows) is not None for fn in self.points.batch_node_order):
            return None
        rows = _best(rows, view.score[rows], count)
        levels = _Levels(self, task, view, rows, count - 1)
        # Python numbers from here on: the loop runs once per pod
        heap = [(-score, row, i) for i, (row, score) in enumerate(zip(rows.tolist(), view.score[rows].tolist()))]
        heapq.heapify(heap)
        placed = [0] * len(rows)
        chosen: list[int] = []
        while heap and len(chosen) < count:
            _, row, i = heapq.heappop(heap)  # the best score, the lowest row on a tie: as select
            chosen.append(row)
            if len(chosen) == count:
                break  # the row's next answers would only serve a pod beyond the plan
            placed[i] += 1
            fits, score = levels.at(placed[i])
            if fits[i]:
                heapq.heappush(heap, (-score[i], row, i))
        return Plan(task.template, chosen, self.table.changes, judges)

    def _judges(self) -> list[Callable[[TaskInfo], bool]] | None:
        """The `batchable` of every plugin whose placement answers a batch depends on; None
        when one of them has none (it cannot say)."""
        if self._batch_judges is None:
            judges = [getattr(plugin, "batchable", None) for plugin in self.points.placement_plugins]
            self._batch_judges = ([judge for judge in judges if judge is not None], None in judges)
        judges, mute = self._batch_judges
        return None if mute else judges


def _best(rows: np.ndarray, scores: np.ndarray, count: int) -> np.ndarray:
    """The `count` rows that come first by score, then row: no other row can be chosen
    before one of them has been."""
    n = len(rows)
    if n <= count:
        return rows
    if n >= 64 * count:  # few of many: first keep the scores at or above a value a sample says
        sample = scores[:: n // 1024 or 1]  # about 4 * count of them reach, so the partition is small
        rank = min(len(sample) - 1, 4 * count * len(sample) // n + 1)
        keep = scores >= np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
        if np.count_nonzero(keep) >= count:  # then the count best are all kept, in row order
            rows, scores = rows[keep], scores[keep]
    cut = np.partition(scores, len(scores) - count)[len(scores) - count]
    above = rows[scores > cut]
    return np.concatenate([above, rows[scores == cut][: count - len(above)]])


class _Levels:
    """A plan's rows' answers with j more pods of the template on each, j = 1, 2, ...: each
    level is the one before plus one pod charged, worked out when first asked for, for all
    the rows at once. Where every plugin has array forms, several levels are worked out in
    one call, as `RowState`s of their own (the charged figures: running sums, in order, as
    NodeTable.charge and touch make them); otherwise level by level, on the table charged
    for that moment and then put back exactly."""

    _STATE = ("used", "idle", "future", "pods")
    FIRST_LEVELS = 4

    def __init__(self, placement: Placement, task: TaskInfo, view: TemplateView, rows: np.ndarray, deepest: int):
        self.placement, self.task, self.view, self.rows = placement, task, view, rows
        self.deepest = deepest  # the most levels a plan can ask for
        table = placement.table
        self.arrays = [getattr(table, name) for name in self._STATE]
        self.base = [array[rows] for array in self.arrays]  # copies: what the rows are put back to
        self.state = self.base
        self.releasing, self.pipelined = table.releasing[rows], table.pipelined[rows]  # no level changes them
        self.answers: list[tuple[list[bool], list[float]]] = []
        points = placement.points
        self.stacked = points.node_order_on is not None and points.row_predicate_on is not None

    def at(self, level: int) -> tuple[list[bool], list[float]]:
        """(fits idle and passes steps 1-3, score) per row with `level` pods charged."""
        while len(self.answers) < level:
            if self.stacked:
                self._next_levels(level)
            else:
                self._next()
        return self.answers[level - 1]

    def _next(self) -> None:
        rows, req = self.rows, self.task.resreq
        used, idle, _, pods = self.state
        used = used + req  # as NodeTable.charge and touch compute a charged row
        idle = idle - req
        future = idle + self.releasing - self.pipelined
        self.state = [used, idle, future, pods + 1]
        arrays = self.arrays
        try:
            for array, value in zip(arrays, self.state):
                array[rows] = value
            codes, fits_idle, score = self.placement._row_answers(self.task, self.view, rows)
        finally:
            for array, value in zip(arrays, self.base):
                array[rows] = value
        self.answers.append((((codes == Code.FITS) & fits_idle).tolist(), score.tolist()))

    def _next_levels(self, wanted: int) -> None:
        """The next levels, at least up to `wanted`: a few at first (most plans ask for two
        or three), then as many again as there are, no more than a plan can ask for."""
        have = len(self.answers)
        count = max(wanted - have, min(have or self.FIRST_LEVELS, self.deepest - have), 1)
        rows, req = self.rows, self.task.resreq
        used, idle, _, pods = self.state
        used_levels = np.empty((count + 1, *used.shape))
        used_levels[0], used_levels[1:] = used, req
        np.add.accumulate(used_levels, axis=0, out=used_levels)  # in order, one pod at a time, as charged
        idle_levels = np.empty_like(used_levels)
        idle_levels[0], idle_levels[1:] = idle, req
        np.subtract.accumulate(idle_levels, axis=0, out=idle_levels)
        used_levels, idle_levels = used_levels[1:], idle_levels[1:]
        future_levels = idle_levels + self.releasing - self.pipelined
        pods_levels = pods + np.arange(1, count + 1)[:, None]
        self.state = [used_levels[-1], idle_levels[-1], future_levels[-1], pods_levels[-1]]
        n, dims = len(rows), used.shape[1]
        state = RowState(self.placement.table, np.tile(rows, count), {
            "used": used_levels.reshape(count * n, dims), "idle": idle_levels.reshape(count * n, dims),
            "future": future_levels.reshape(count * n, dims), "pods": pods_levels.reshape(count * n)})
        codes, fits_idle, score = self.placement._answers(self.task, self.view, state)
        fits = ((codes == Code.FITS) & fits_idle).reshape(count, n).tolist()
        self.answers.extend(zip(fits, score.reshape(count, n).tolist()))
