"""nodeorder: kube-scheduler's scores, each 0..100, summed with Volcano's weights.

Arguments (default weight): leastrequested.weight (1), mostrequested.weight (0),
balancedresource.weight (1), nodeaffinity.weight (2), podaffinity.weight (2),
tainttoleration.weight (3), imagelocality.weight (1, no image data here so it adds nothing),
podtopologyspread.weight (2). As in Volcano, node affinity is not normalised (its score is
the sum of matching preferred weights); pod affinity, taint toleration and topology spread
are normalised over the candidate nodes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.nodeindex import domain_counts, placed_tasks, term_rows, untolerated
from central.framework.plugin import Arguments, Plugin
from central.framework.rowstate import RowState
from central.model.nodetable import row_sum
from central.model.objects import PodTemplate, TaskInfo
from central.resources.vectors import EPSILON

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

MAX_SCORE = 100
WEIGHTS = {"leastrequested": 1, "mostrequested": 0, "balancedresource": 1, "nodeaffinity": 2,
           "podaffinity": 2, "tainttoleration": 3, "imagelocality": 1, "podtopologyspread": 2}
BALANCED_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


def _ratio(top: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """top / alloc, 0 where the node has none of the resource."""
    return np.divide(top, alloc, out=np.zeros_like(top), where=alloc > 0)


def least_requested(requested: np.ndarray, alloc: np.ndarray, positive: bool = False) -> np.ndarray:
    """`positive`: every node has every column (alloc > 0), so a plain division is `_ratio`."""
    top = (alloc - requested) * MAX_SCORE
    per = np.floor(top / alloc if positive else _ratio(top, alloc))
    # 0 where more is requested than allocatable: exactly the negative figures (top < 0 there,
    # alloc > 0 or the ratio 0), so a maximum does it in one call where a masked write takes two
    np.maximum(per, 0.0, out=per)
    return np.floor(row_sum(per) / per.shape[1])


def most_requested(requested: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    per = np.floor(_ratio(np.minimum(requested, alloc) * MAX_SCORE, alloc))
    return np.floor(per.sum(axis=1) / per.shape[1])


def balanced(requested: np.ndarray, alloc: np.ndarray, positive: bool = False) -> np.ndarray:
    """(1 - standard deviation of the requested fractions) x 100, over resources the node has
    (`positive`: every node has every column, so no column is left out: the same figures)."""
    if positive:
        frac = np.minimum(requested / alloc, 1.0)
        counted: int | np.ndarray = frac.shape[1]
        mean = row_sum(frac) / counted
        spread = frac - mean[:, None]
    else:
        has = alloc > 0
        frac = np.minimum(_ratio(requested, alloc), 1.0)
        counted = np.maximum(has.sum(axis=1), 1)
        mean = frac.sum(axis=1) / counted
        spread = np.where(has, frac - mean[:, None], 0.0)
    std = np.sqrt(row_sum(spread ** 2) / counted)
    # with two resources this equals kube's |f1 - f2| / 2
    return np.floor((1 - std) * MAX_SCORE)


def normalise(raw: np.ndarray, reverse: bool = False) -> np.ndarray:
    """kube's DefaultNormalizeScore: scale to 0..100 by the maximum (reversed: fewer is better)."""
    top = raw.max() if len(raw) else 0
    if top <= 0:
        return np.full(len(raw), float(MAX_SCORE) if reverse else 0.0)
    scaled = np.floor(raw * MAX_SCORE / top)
    return MAX_SCORE - scaled if reverse else scaled


class NodeOrder(Plugin, ext.NodeOrder, ext.BatchNodeOrder):
    name = "nodeorder"
    rows_by_table = True  # its row scores read the table, node affinity the node index

    @classmethod
    def read_arguments(cls, args: Arguments) -> dict[str, int]:
        return {k: args.get(f"{k}.weight", v, int) for k, v in WEIGHTS.items()}

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.weights: dict[str, int] = self.settings
        self.index = handle.node_index
        self._static: dict[PodTemplate, tuple[np.ndarray, np.ndarray]] = {}
        self._cols: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._batchable: dict[PodTemplate, bool] = {}

    def batchable(self, task: TaskInfo) -> bool:
        """Row scores read the table (node affinity is static); the normalised scores must
        add nothing for the template."""
        template = task.template
        answer = self._batchable.get(template)
        if answer is None:
            w = self.weights
            answer = self._batchable[template] = not (
                (w["tainttoleration"] and self._static_scores(template)[1].any())
                or (w["podaffinity"] and (template.preferred_pod_affinity or template.preferred_pod_anti_affinity))
                or (w["podtopologyspread"] and any(c.when_unsatisfiable == "ScheduleAnyway" for c in template.spread)))
        return answer

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        return self.node_order_on(task, RowState(self.handle.table, rows))

    def node_order_on(self, task: TaskInfo, state: RowState) -> np.ndarray:
        w = self.weights
        score = np.zeros(len(state))
        # cpu and memory come first in the balanced columns: one read of the table serves all
        cols, need = self._balanced_cols(task)
        requested = state.block("used", cols) + state.block("pipelined", cols) + need
        alloc = state.block("alloc", cols)
        positive = np.count_nonzero(alloc > 0) == alloc.size
        if w["leastrequested"]:
            score += w["leastrequested"] * least_requested(requested[:, :2], alloc[:, :2], positive)
        if w["mostrequested"]:
            score += w["mostrequested"] * most_requested(requested[:, :2], alloc[:, :2])
        if w["balancedresource"]:
            score += w["balancedresource"] * balanced(requested, alloc, positive)
        if w["nodeaffinity"] and task.template.preferred_node_terms:  # no terms: all zero, adding nothing
            affinity, _ = self._static_scores(task.template)
            score += w["nodeaffinity"] * affinity[state.rows]
        return score

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        """The scores kube normalises over the candidate nodes."""
        w, template = self.weights, task.template
        score = None
        _, taints = self._static_scores(template)
        if w["tainttoleration"] and taints.any():  # all zero normalises to a constant: no effect
            score = w["tainttoleration"] * normalise(taints[rows], reverse=True)
        if w["podaffinity"] and (template.preferred_pod_affinity or template.preferred_pod_anti_affinity):
            score = _plus(score, w["podaffinity"] * self._pod_affinity(template, rows))
        if w["podtopologyspread"] and any(c.when_unsatisfiable == "ScheduleAnyway" for c in template.spread):
            score = _plus(score, w["podtopologyspread"] * self._spread(template, rows))
        return score

    def _balanced_cols(self, task: TaskInfo) -> tuple[np.ndarray, np.ndarray]:
        """The balanced columns for the task's request, and the request on them."""
        found = self._cols.get(id(task.resreq))
        if found is None:
            index = self.handle.dims.index
            cols = np.array([index[r] for r in BALANCED_RESOURCES
                             if r in index and (r in ("cpu", "memory") or task.resreq[index[r]] > EPSILON)], dtype=np.intp)
            found = self._cols[id(task.resreq)] = (cols, task.resreq[cols], task.resreq)  # the request held: its id stays its own
        return found[0], found[1]

    def _static_scores(self, template: PodTemplate) -> tuple[np.ndarray, np.ndarray]:
        cached = self._static.get(template)
        if cached is None:
            idx = self.index
            affinity = np.zeros(idx.n)
            for weight, term in template.preferred_node_terms:
                affinity += weight * idx.matches(term)
            tolerations = template.tolerations
            taints = idx.per_taint_group(lambda t: untolerated(t, tolerations, ("PreferNoSchedule",))).astype(float)
            cached = self._static[template] = (affinity, taints)
        return cached

    def _pod_affinity(self, template: PodTemplate, rows: np.ndarray) -> np.ndarray:
        raw = np.zeros(len(rows))
        nodes, ns = self.handle.nodes, template.namespace
        for sign, terms in ((1, template.preferred_pod_affinity), (-1, template.preferred_pod_anti_affinity)):
            for term in terms:
                counts = domain_counts(self.index, term.topology_key, term_rows(nodes, term, ns))
                values = self.index.label(term.topology_key)[rows]
                raw += sign * term.weight * np.fromiter((counts.get(v, 0) for v in values), float, len(rows))
        low, high = (raw.min(), raw.max()) if len(raw) else (0, 0)
        return np.floor((raw - low) * MAX_SCORE / (high - low)) if high > low else np.zeros(len(rows))

    def _spread(self, template: PodTemplate, rows: np.ndarray) -> np.ndarray:
        raw = np.zeros(len(rows))
        nodes, ns = self.handle.nodes, template.namespace
        for c in template.spread:
            if c.when_unsatisfiable != "ScheduleAnyway":
                continue
            matching = [row for row, t in placed_tasks(nodes) if t.namespace == ns and c.selector.matches(t.template.label_map)]
            counts = domain_counts(self.index, c.topology_key, matching)
            values = self.index.label(c.topology_key)[rows]
            weight = math.log(len({v for v in values if v is not None}) + 2)
            raw += weight * np.fromiter((counts.get(v, 0) for v in values), float, len(rows))
        return normalise(raw, reverse=True)


def _plus(total: np.ndarray | None, more: np.ndarray) -> np.ndarray:
    return more if total is None else total + more
