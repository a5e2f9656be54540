"""usage: load-aware placement from what the agents measure, not what pods request.

Arguments (Volcano's): `usage.weight` (5), `cpu.weight` (1), `memory.weight` (1),
`thresholds: {cpu: 80, mem: 80}` (percent). A node whose measured usage, plus an estimate
for the pods placed on it since its report, is above a threshold is filtered out; among the
rest, the less loaded score higher:
    load_r = min(1, (usage_r + estimate_r) / allocatable_r)
    score  = ((1 - load_cpu) * cpu.weight + (1 - load_mem) * memory.weight)
             / (cpu.weight + memory.weight) * 100 * usage.weight
The estimate counts pods bound or placed but not yet running (their usage is not in the
report yet) at `estimator.request_ratio` (0.7) of their request, so a burst of binds does not
pile onto the node that looked idlest. Without a fresh report, a node's requests stand in for
its usage (the estimate covers all its pods at their full request): it is neither favoured
nor filtered for being unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check
from central.model.objects import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption


class Usage(Plugin, ext.RowPredicate, ext.NodeOrder, ext.AllocationEvents):
    name = "usage"

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[float, ...]:
        """(usage.weight, cpu.weight, memory.weight, cpu limit, memory limit, request ratio)"""
        thresholds = args.get("thresholds", {}, dict)
        estimator = args.get("estimator", {}, dict)
        try:
            limits = (float(thresholds.get("cpu", 80)) / 100, float(thresholds.get("mem", 80)) / 100,
                      float(estimator.get("request_ratio", 0.7)))
        except (TypeError, ValueError):
            raise args.error("thresholds / estimator", "values must be numbers") from None
        return (args.get("usage.weight", 5, float), args.get("cpu.weight", 1, float),
                args.get("memory.weight", 1, float), *limits)

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.weight, self.cpu_weight, self.memory_weight, self.cpu_limit, self.memory_limit, self.ratio = self.settings
        self.view = handle.agents
        # Per row: usage not yet in the report (pods not running yet, or every pod of a node
        # without a fresh report), kept current by the allocate/deallocate events.
        n = len(handle.nodes)
        table = handle.table
        unknown = ~self.view.has_usage
        self.estimate = np.zeros((n, 2))
        self.estimate[unknown] = table.used[:n, :2][unknown] + table.pipelined[:n, :2][unknown]  # requests stand in
        self.added: dict[str, tuple[int, np.ndarray]] = {}
        nodes = handle.nodes_by_name
        for task in handle.starting.values():  # their usage is not in the reports yet
            node = nodes.get(task.node or "")
            if node is not None and self.view.has_usage[node.index]:
                self.estimate[node.index] += self.ratio * task.resreq[:2]

    def on_allocate(self, task: TaskInfo) -> None:
        node = self.handle.nodes_by_name.get(task.node or "")
        if node is not None and task.uid not in self.added:
            amount = (self.ratio if self.view.has_usage[node.index] else 1.0) * task.resreq[:2]
            self.estimate[node.index] += amount
            self.added[task.uid] = (node.index, amount)

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.status == TaskStatus.PENDING and task.uid in self.added:  # an allocation undone
            row, amount = self.added.pop(task.uid)
            self.estimate[row] -= amount

    def _load(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cpu load, memory load) as fractions of allocatable, measured plus estimated."""
        measured = np.stack([self.view.cpu_usage[rows], self.view.memory_usage[rows]], axis=1)
        alloc = self.handle.table.alloc[rows][:, :2]
        load = np.divide(measured + self.estimate[rows], alloc, out=np.ones_like(measured), where=alloc > 0)
        return np.minimum(load[:, 0], 1.0), np.minimum(load[:, 1], 1.0)

    def row_predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        """Unresolvable, as in Volcano: measured load does not drop when pods are evicted."""
        cpu, memory = self._load(rows)
        return [Check(cpu <= self.cpu_limit, "node(s) cpu usage above the usage plugin's threshold"),
                Check(memory <= self.memory_limit, "node(s) memory usage above the usage plugin's threshold")]

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        cpu, memory = self._load(rows)
        total = self.cpu_weight + self.memory_weight
        if not total:
            return np.zeros(len(rows))
        return ((1 - cpu) * self.cpu_weight + (1 - memory) * self.memory_weight) / total * 100 * self.weight
