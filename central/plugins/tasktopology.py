"""task-topology: keep a job's chatty tasks together and its competing tasks apart.

PodGroup annotations (Volcano's):
    volcano.sh/task-topology-affinity: "ps,worker;evaluator"   groups of tasks that should share nodes
    volcano.sh/task-topology-anti-affinity: "ps"               tasks that should not share nodes
    volcano.sh/task-topology-task-order: "ps,worker"           which tasks are placed first
A task listed alone in an anti-affinity group repels its own kind (two ps on different
nodes). Node score: the job's tasks already on the node that are affine to this task, minus
those anti-affine to it, scaled over the candidates to 0..100 and multiplied by
`task-topology.weight` (1). Affine tasks thus pack onto the nodes their partners are on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.model.objects import JobInfo, TaskInfo

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"
MAX_SCORE = 100


def _groups(text: str) -> list[set[str]]:
    return [{t.strip() for t in group.split(",") if t.strip()} for group in text.split(";") if group.strip()]


class JobTopology:
    """Which roles of one job attract and repel each other."""

    def __init__(self, job: JobInfo):
        self.affinity = _groups(job.annotations.get(AFFINITY, ""))
        self.anti = _groups(job.annotations.get(ANTI_AFFINITY, ""))
        order = [t.strip() for t in job.annotations.get(TASK_ORDER, "").split(",") if t.strip()]
        self.rank = {role: i for i, role in enumerate(order)}

    def pull(self, role: str, other: str) -> int:
        """+1 if the two roles attract, -1 if they repel, 0 otherwise."""
        if any(role in g and other in g for g in self.anti):
            return -1
        if any(role in g and other in g for g in self.affinity):
            return 1
        return 0

    @property
    def shapes_placement(self) -> bool:
        return bool(self.affinity or self.anti)


class TaskTopology(Plugin, ext.TaskOrder, ext.BatchNodeOrder):
    name = "task-topology"

    @classmethod
    def read_arguments(cls, args: Arguments) -> int:
        return args.get("task-topology.weight", 1, int)

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.weight: int = self.settings
        self.jobs = {uid: JobTopology(job) for uid, job in handle.jobs.items()
                     if any(k in job.annotations for k in (AFFINITY, ANTI_AFFINITY, TASK_ORDER))}

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        topology = self.jobs.get(left.job_uid)
        if topology is None or left.job_uid != right.job_uid:
            return 0
        lr, rr = topology.rank.get(left.role, len(topology.rank)), topology.rank.get(right.role, len(topology.rank))
        return -1 if lr < rr else (1 if lr > rr else 0)

    def batchable(self, task: TaskInfo) -> bool:
        topology = self.jobs.get(task.job_uid)
        return topology is None or not topology.shapes_placement or not self.weight

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        topology = self.jobs.get(task.job_uid)
        if topology is None or not topology.shapes_placement or not self.weight:
            return None
        nodes = self.handle.nodes_by_name
        pull_by_row: dict[int, int] = {}
        for other in self.handle.jobs[task.job_uid].tasks.values():
            if other is task or other.node is None or other.node not in nodes:
                continue
            pull = topology.pull(task.role, other.role)
            if pull:
                row = nodes[other.node].index
                pull_by_row[row] = pull_by_row.get(row, 0) + pull
        if not pull_by_row:
            return None
        raw = np.fromiter((pull_by_row.get(int(r), 0) for r in rows), float, len(rows))
        low, high = raw.min(), raw.max()
        if high <= low:
            return None
        return np.floor((raw - low) * MAX_SCORE / (high - low)) * self.weight
