"""drf: dominant resource fairness between jobs.

A job's share is its largest per-resource fraction of the cluster (x/0 counts as 1). Jobs
with a lower share go first; a preemptor may take a victim only if, afterwards, its share
stays at or below the victim job's.
"""

from __future__ import annotations

import numpy as np

from central.api.resources import EPSILON
from central.errors import InputError
from central.framework.plugin import AccountingPlugin
from central.model.objects import JobInfo, TaskInfo

SHARE_TOLERANCE = 1e-6


def dominant_share(allocated: np.ndarray, total: np.ndarray) -> float:
    """max over resources of allocated/total, where x/0 is 1 (0/0 is 0)."""
    has = total > EPSILON
    share = float(np.divide(allocated, total, out=np.zeros_like(allocated), where=has).max(initial=0.0))
    if share < 1.0 and np.any(allocated[~has] > EPSILON):
        return 1.0
    return share


class Drf(AccountingPlugin):
    name = "drf"

    def __init__(self, option, session):
        super().__init__(option, session)
        if option.enabled("enableHierarchy"):
            raise InputError("plugin drf: enableHierarchy", "hierarchical DRF is not supported; "
                             "for queue trees use the capacity plugin with enableHierarchy")
        self.total = session.total
        # Volcano's drf counts every task charged in the session, pipelined ones included.
        self.allocated = {uid: job.allocated.copy() for uid, job in session.jobs.items()}
        self.shares: dict[str, float] = {}  # computed when an ordering asks, dropped on change

    def share(self, job_uid: str) -> float:
        share = self.shares.get(job_uid)
        if share is None:
            vec = self.allocated.get(job_uid)
            share = self.shares[job_uid] = dominant_share(vec, self.total) if vec is not None else 0.0
        return share

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        ls, rs = self.share(left.uid), self.share(right.uid)
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

    def charge(self, task: TaskInfo, sign: int) -> None:
        vec = self.allocated.get(task.job_uid)
        if vec is not None:
            vec += sign * task.resreq
            self.shares.pop(task.job_uid, None)


