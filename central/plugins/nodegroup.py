"""nodegroup: a Queue's spec.affinity ties its pods to node groups.

A node's group is its label `volcano.sh/nodegroup-name`. A queue names groups under
`spec.affinity.nodeGroupAffinity` and `nodeGroupAntiAffinity`, each with
`requiredDuringSchedulingIgnoredDuringExecution` and `preferredDuringSchedulingIgnoredDuringExecution`
lists. As Volcano's plugin decides, for a pod of the queue:

- predicate: a node with a group fits when the group is required or preferred, unless it is
  anti-required; an anti-preferred group always fits. A queue with no affinity fits no
  grouped node ("node group affinity not specified"). A node without the label fits no pod
  ("node group label not found"), except, with the argument `strict: false`, pods of queues
  without affinity. Every refusal is unresolvable: evicting pods does not change a label.
- score: +100 for a required group, +50 for a preferred one (with `enablePreferredOrder:
  true`, 50 x (n - i) / n for the i-th of n preferred groups), and -1 in all for an
  anti-preferred group; nodes without a group, and queues without affinity, score 0.
- resource limits: the queue annotation `volcano.sh/nodegroup-resource-limits`, JSON such as
  `{"group1": {"cpu": "3", "memory": "8Gi"}}`, caps what the queue's allocated pods may
  hold in each group, on the names given (others unlimited); a node whose group the pod
  would take over its cap does not fit. An annotation that does not read fits no node for
  the queue's pods.
- with `enableHierarchy: true`, a queue without affinity takes its nearest ancestor's
  (`spec.parent`, default `root`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check
from central.model.objects import ALLOCATED_STATUSES, NodeGroupAffinity, QueueInfo, TaskInfo
from central.resources.vectors import parse_resource_list

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

GROUP_LABEL = "volcano.sh/nodegroup-name"
LIMITS_ANNOTATION = "volcano.sh/nodegroup-resource-limits"
ROOT = "root"
BASE_SCORE = 100.0
MIN_RESOURCE = 0.1  # Volcano's GetMinResource: smaller excesses are rounding

LABEL_NOT_FOUND = "node group label not found"
AFFINITY_NOT_FOUND = "node group affinity not specified"
UNSATISFIED = "node does not satisfy the node group affinity"
LIMIT_INVALID = "node group resource limit annotation invalid"
LIMIT_EXCEEDED = "node group resource limit exceeded"


def group_fits(affinity: NodeGroupAffinity, group: str) -> bool:
    """Volcano's order: affinity, then anti-affinity required, then anti-affinity preferred."""
    fits = group in affinity.required or group in affinity.preferred
    if group in affinity.anti_required:
        fits = False
    if group in affinity.anti_preferred:
        fits = True
    return fits


def group_score(affinity: NodeGroupAffinity, group: str, preferred_order: bool) -> float:
    score = BASE_SCORE if group in affinity.required else 0.0
    if group in affinity.preferred:
        if preferred_order:
            n = len(affinity.preferred)
            score += 0.5 * BASE_SCORE * (n - affinity.preferred.index(group)) / n
        else:
            score += 0.5 * BASE_SCORE
    if group in affinity.anti_preferred:
        score = -1.0
    return score


def parse_limits(queue: QueueInfo) -> dict[str, dict[str, float]]:
    """The queue's per-group limits (group -> resource -> canonical value); InputError if unreadable."""
    raw = queue.annotations.get(LIMITS_ANNOTATION)
    if not raw:
        return {}
    where = f"Queue {queue.name}: metadata.annotations[{LIMITS_ANNOTATION}]"
    try:
        groups = json.loads(raw)
    except ValueError as err:
        raise InputError(where, f"expected JSON like {{\"group1\": {{\"cpu\": \"3\"}}}}: {err}") from None
    if not isinstance(groups, dict):
        raise InputError(where, "expected a map of node group to resource list")
    return {str(group): parse_resource_list(limits, f"{where}.{group}") for group, limits in groups.items()}


@dataclass
class _QueueAttr:
    affinity: NodeGroupAffinity | None
    limits: dict[str, dict[str, float]] = field(default_factory=dict)
    limit_error: str | None = None
    allocated: dict[str, np.ndarray] = field(default_factory=dict)  # group -> what the queue holds there


class NodeGroup(Plugin, ext.Predicate, ext.BatchNodeOrder, ext.AllocationEvents):
    name = "nodegroup"

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[bool, bool]:
        return args.get("strict", True, bool), args.get("enablePreferredOrder", False, bool)

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.strict, self.preferred_order = self.settings
        self.group_of_row: list[str | None] = [node.labels.get(GROUP_LABEL) for node in handle.nodes]
        self.grouped_rows = np.array([g is not None for g in self.group_of_row], dtype=bool)
        self._fits: dict[NodeGroupAffinity, np.ndarray] = {}  # per affinity, over all rows
        self._scores: dict[NodeGroupAffinity, np.ndarray] = {}
        self.attrs: dict[str, _QueueAttr] = {}
        for name, queue in handle.queues.items():
            attr = self.attrs[name] = _QueueAttr(queue.node_groups)
            try:
                attr.limits = parse_limits(queue)
            except InputError as err:
                attr.limit_error = str(err)
        if option.enabled("enableHierarchy"):
            for name in self.attrs:
                self._inherit(name)
        self.charged: dict[str, tuple[str, str]] = {}  # task uid -> (queue, group) it is counted in
        for job in handle.jobs.values():
            for task in job.tasks.values():
                if task.status in ALLOCATED_STATUSES:
                    self.on_allocate(task)

    def _inherit(self, name: str) -> None:
        """A queue without affinity takes its nearest ancestor's."""
        attr = self.attrs[name]
        if attr.affinity is not None:
            return
        seen = {name}
        queue = self.handle.queues[name]
        while name != ROOT:
            name = (queue.parent or ROOT)
            if name in seen or name not in self.handle.queues:
                return  # a cycle, or a parent the session does not know
            seen.add(name)
            queue = self.handle.queues[name]
            if queue.node_groups is not None:
                attr.affinity = queue.node_groups
                return

    def _attr(self, task: TaskInfo) -> _QueueAttr | None:
        job = self.handle.jobs.get(task.job_uid)
        return self.attrs.get(job.queue) if job is not None else None

    # --- placement ------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        attr = self._attr(task)
        if attr is not None and attr.limit_error is not None:
            return [Check(np.zeros(len(rows), dtype=bool), LIMIT_INVALID)]
        affinity = attr.affinity if attr is not None else None
        unset = affinity is None or affinity.empty
        grouped = self.grouped_rows[rows]
        checks = []
        if self.strict or not unset:
            checks.append(Check(grouped, LABEL_NOT_FOUND))
        if unset:
            checks.append(Check(~grouped, AFFINITY_NOT_FOUND))
            return checks
        assert affinity is not None and attr is not None
        checks.append(Check(self._fitting_rows(affinity)[rows], UNSATISFIED))
        if attr.limits:
            over = {group for group in attr.limits if self._over_limit(attr, group, task)}
            if over:
                checks.append(Check(np.array([self.group_of_row[row] not in over for row in rows], dtype=bool),
                                    LIMIT_EXCEEDED))
        return checks

    def _fitting_rows(self, affinity: NodeGroupAffinity) -> np.ndarray:
        """Per node row: ungrouped, or its group fits the affinity (kept per affinity)."""
        fits = self._fits.get(affinity)
        if fits is None:
            verdict = {g: group_fits(affinity, g) for g in set(self.group_of_row) if g is not None}
            fits = self._fits[affinity] = np.array([g is None or verdict[g] for g in self.group_of_row], dtype=bool)
        return fits

    def _over_limit(self, attr: _QueueAttr, group: str, task: TaskInfo) -> bool:
        limit = attr.limits.get(group)
        if limit is None:
            return False
        dims = self.handle.dims
        held = attr.allocated.get(group)
        after = task.resreq.copy() if held is None else held + task.resreq
        for name, cap in limit.items():
            col = dims.index.get(name)
            used = float(after[col]) if col is not None else 0.0
            if used > cap and used - cap >= MIN_RESOURCE:
                return True
        return False

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        attr = self._attr(task)
        if attr is None or attr.affinity is None:
            return None
        affinity = attr.affinity
        scores = self._scores.get(affinity)
        if scores is None:
            by_group = {g: group_score(affinity, g, self.preferred_order) for g in set(self.group_of_row) if g is not None}
            scores = self._scores[affinity] = np.array([0.0 if g is None else by_group[g] for g in self.group_of_row])
        return scores[rows]

    def batchable(self, task: TaskInfo) -> bool:
        attr = self._attr(task)  # with limits, each placement changes what the next pod may use
        return attr is None or (attr.affinity is None and not attr.limits)

    # --- what each queue holds per group --------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        job = self.handle.jobs.get(task.job_uid)
        node = self.handle.nodes_by_name.get(task.node or "")
        if job is None or node is None or job.queue not in self.attrs:
            return
        group = self.group_of_row[node.index] if node.index < len(self.group_of_row) else None
        if group is None:
            return
        attr = self.attrs[job.queue]
        held = attr.allocated.get(group)
        attr.allocated[group] = task.resreq.copy() if held is None else held + task.resreq
        self.charged[task.uid] = (job.queue, group)

    def on_deallocate(self, task: TaskInfo) -> None:
        charged = self.charged.pop(task.uid, None)  # a discarded allocation has lost its node already
        if charged is not None:
            queue, group = charged
            self.attrs[queue].allocated[group] = self.attrs[queue].allocated[group] - task.resreq
