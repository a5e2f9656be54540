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

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import AccountingPlugin
from central.model.objects import JobInfo, QueueInfo, TaskInfo, TaskStatus
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
        self.allocated = _Charged(handle.jobs)
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
        if task.job_uid in self.allocated:
            self.allocated.pipeline(task, sign)
            self.shares.pop(task.job_uid, None)
            self.tree_state = None

    def charge_run(self, tasks: Sequence[TaskInfo], sign: int) -> None:  # allocated pods: the cache counts them
        for uid in {task.job_uid for task in tasks}:
            self.shares.pop(uid, None)
        self.tree_state = None


class _Charged(Mapping[str, np.ndarray]):
    """What drf counts of each of the session's jobs (read-only vectors): Volcano's drf counts
    every pod charged in the session, pipelined ones included, and the cache's `allocated` of the
    job counts all but the pipelined ones (it has counted each change before the plugins are
    told of it). So: the cache's vector, plus the pods this session pipelined, told here."""

    def __init__(self, jobs: Mapping[str, JobInfo]) -> None:
        self.jobs = jobs
        self.pipelined: dict[str, np.ndarray] = {}  # job -> its pods pipelined this session, summed
        self.pipelined_pods: set[str] = set()

    def pipeline(self, task: TaskInfo, sign: int) -> None:
        """Count a pipelined pod (`sign` 1, told while the pod is Pipelined) or take it back
        (-1, told once the cache has put it back)."""
        assert task.resreq is not None
        if sign > 0 and task.status == TaskStatus.PIPELINED:
            self.pipelined_pods.add(task.uid)
            was = self.pipelined.get(task.job_uid)
            self.pipelined[task.job_uid] = task.resreq.copy() if was is None else was + task.resreq
        elif sign < 0 and task.uid in self.pipelined_pods:
            self.pipelined_pods.discard(task.uid)
            self.pipelined[task.job_uid] = self.pipelined[task.job_uid] - task.resreq

    def __getitem__(self, uid: str) -> np.ndarray:
        allocated = self.jobs[uid].allocated
        assert allocated is not None
        extra = self.pipelined.get(uid)
        return allocated if extra is None else allocated + extra

    def __iter__(self) -> Iterator[str]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)


