"""drf: dominant resource fairness between jobs.

A job's share is its largest per-resource fraction of the cluster (x/0 counts as 1). Jobs
with a lower share go first; a preemptor may take a victim only if, afterwards, its share
stays at or below the victim job's.

With `enableHierarchy` (HDRF, see `central.plugins.hdrf`) drf also orders queues along their
`volcano.sh/hierarchy` paths, and votes in reclaim: a victim is allowed when, with the
reclaimer's request added and the victim's removed, the reclaimer's queue would still come
before the victim's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import AccountingPlugin, charge_repeated
from central.model.objects import JobInfo, QueueInfo, TaskInfo
from central.plugins.hdrf import HdrfTree
from central.resources.vectors import dominant_share

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

SHARE_TOLERANCE = 1e-6


class Drf(AccountingPlugin, ext.JobOrder, ext.QueueOrder, ext.Preemptable, ext.Reclaimable):
    name = "drf"
    divides_queues = "hierarchical"  # with enableHierarchy

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.total = handle.total
        # Volcano's drf counts every task charged in the session, pipelined ones included.
        self.allocated = {uid: job.allocated.copy() for uid, job in handle.jobs.items()}
        self.shares: dict[str, float] = {}  # computed when an ordering asks, dropped on change
        self.tree: HdrfTree | None = None
        self.tree_state: Mapping[tuple[str, ...] | str, tuple[float, bool]] | None = None  # the tree evaluated, dropped on change
        if option.enabled("enableHierarchy"):
            queues = handle.queues
            self.tree = HdrfTree(self.total, [
                (uid, queues[job.queue].hierarchy, queues[job.queue].hierarchy_weights,
                 sum((t.resreq for t in job.tasks.values()), handle.dims.zeros()))
                for uid, job in handle.jobs.items() if job.queue in queues])

    def _share(self, job_uid: str) -> float:
        share = self.shares.get(job_uid)
        if share is None:
            vec = self.allocated.get(job_uid)
            share = self.shares[job_uid] = dominant_share(vec, self.total) if vec is not None else 0.0
        return share

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        shares = self.shares  # every heap comparison asks: the cached share without a call
        ls, rs = shares.get(left.uid), shares.get(right.uid)
        if ls is None:
            ls = self._share(left.uid)
        if rs is None:
            rs = self._share(right.uid)
        return -1 if ls < rs else (1 if ls > rs else 0)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        mine = self.allocated[preemptor.job_uid] + preemptor.resreq
        my_share = dominant_share(mine, self.total)
        victims = []
        freed: dict[str, np.ndarray] = {}
        for task in candidates:
            if task.job_uid == preemptor.job_uid:
                continue
            left = freed.get(task.job_uid, self.allocated.get(task.job_uid))
            if left is None:
                continue
            left = left - task.resreq
            if my_share <= dominant_share(left, self.total) + SHARE_TOLERANCE:
                freed[task.job_uid] = left
                victims.append(task)
        return victims

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if self.tree is None:
            return 0
        if self.tree_state is None:
            self.tree_state = self.tree.evaluate(self.allocated)
        order = self.tree.compare(self.tree_state, left.hierarchy, right.hierarchy)
        return -1 if order < 0 else (1 if order > 0 else 0)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        if self.tree is None:
            return None
        jobs, queues = self.handle.jobs, self.handle.queues
        mine = queues[jobs[reclaimer.job_uid].queue].hierarchy
        allocated = dict(self.allocated)
        allocated[reclaimer.job_uid] = allocated[reclaimer.job_uid] + reclaimer.resreq
        victims = []
        for task in candidates:
            job = jobs.get(task.job_uid)
            if job is None or task.job_uid not in allocated or job.queue not in queues:
                continue
            trial = {**allocated, task.job_uid: allocated[task.job_uid] - task.resreq}
            if self.tree.compare(self.tree.evaluate(trial), mine, queues[job.queue].hierarchy) < 0:
                victims.append(task)
        return victims

    def charge(self, task: TaskInfo, sign: int) -> None:
        vec = self.allocated.get(task.job_uid)
        if vec is not None:
            vec += sign * task.resreq
            self.shares.pop(task.job_uid, None)
            self.tree_state = None

    def charge_run(self, tasks: Sequence[TaskInfo], sign: int) -> None:
        uid = tasks[0].job_uid
        vec = self.allocated.get(uid)
        if vec is None or any(task.job_uid != uid for task in tasks) or not charge_repeated(vec, tasks, sign):
            super().charge_run(tasks, sign)
            return
        self.shares.pop(uid, None)
        self.tree_state = None


