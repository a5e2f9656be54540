"""capacity: explicit queue quotas (deserved, guarantee, capability), flat or as a tree.

Each queue may use up to its real capability (its capability, bounded by what the others'
guarantees leave), borrowing above `deserved` while there is room. Reclaim takes back only
what a queue holds above its deserved share, and never below its guarantee.

With `enableHierarchy`, queues form a tree through `spec.parent` (default `root`): jobs run
only in leaf queues; a child inherits the capability dimensions it leaves unset from its
parent; a child's real capability is its parent's, less its siblings' guarantees; every
check on a queue is made on all its ancestors too, whose allocation includes their
descendants'. The root's real capability is its own capability, unbounded when unset (users
may queue more than the cluster holds; nodes bound placement anyway). Queue order compares
the two queues' ancestors just below their lowest common ancestor; victims come first from
the queues that share the deepest ancestor with the reclaimer (siblings before cousins).

Reclaim, as Volcano's capacity does it:
- Preemptive: the reclaiming queue's allocation plus the request stays within its real
  capability, and within its deserved share on ANY dimension the request uses (dimensions
  where both are zero do not count); failing that at the leaf, the same test on its
  ancestors up to `ancestorReclaimLevel` (0) levels up, root excluded.
- Reclaimable: a victim must leave its queue at or above its guarantee, and either share no
  dimension with the queue's deserved (an immediate victim) or belong to a queue above its
  deserved on a dimension the victim uses; victims sharing no dimension with the reclaimer
  are skipped. With `ancestorReclaimLevel` L > 0, for each level 1..L where the victim's
  ancestor (not root) differs from the reclaimer's, that ancestor must be above its deserved
  likewise; an immediate victim under an ancestor the reclaimer shares within L levels is
  spared when the reclaimer's own deserved says nothing about what it asks.

With SchedulingGatesQueueAdmission on, a pod opted in to queue admission by scheduling gate
that the queue admitted but that is not placed yet holds its room in its (leaf) queue: the
Allocatable check counts it as used, so a later pod cannot take the room it was admitted to.

DRA quota (`capacity.DynamicResourceAllocationEnable`, on by default as the Kubernetes gate is
since 1.34): a `deviceclass/<DeviceClass>` key in a queue's capability caps the devices of
that class its pods' ResourceClaims hold (central/model/draquota.py); a shared claim counts
once. As in Volcano it is a hard limit, checked on Allocatable and JobEnqueueable for the
queue and, with hierarchy, its ancestors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import PERMIT, REJECT, AccountingPlugin, Arguments
from central.framework.status import ALLOWED, Status, refused
from central.model.draquota import DeviceQuota, min_claim_tasks
from central.model.objects import JobInfo, QueueInfo, TaskInfo, TaskStatus
from central.model.queuesums import less_gated
from central.model.schedulinggate import opted_in
from central.plugins.proportion import job_min_resources, over_share
from central.resources.vectors import EPSILON, dominant_share, less_equal_on

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption
    from central.resources.vectors import Dimensions

ROOT = "root"


@dataclass
class Quota:
    name: str
    parent: str | None
    deserved: np.ndarray
    guarantee: np.ndarray
    capability: np.ndarray  # inf where unlimited
    real_capability: np.ndarray
    allocated: np.ndarray
    inqueue: np.ndarray
    elastic: np.ndarray
    children: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, queue: QueueInfo | None, name: str, parent: str | None, dims: Dimensions) -> Quota:
        spec = queue or QueueInfo(name, 1, {}, {}, {}, True, 0, None, "Open")
        capability = dims.vector(spec.capability, missing=np.inf)
        return cls(name, parent, dims.vector(spec.deserved), dims.vector(spec.guarantee), capability,
                   capability.copy(), dims.zeros(), dims.zeros(), dims.zeros())

    @property
    def share(self) -> float:
        if not np.any(self.deserved > EPSILON):
            return 1.0
        return dominant_share(self.allocated, self.deserved)


class Capacity(AccountingPlugin, ext.QueueOrder, ext.VictimQueueOrder, ext.JobEnqueueable,
               ext.Allocatable, ext.Preemptive, ext.Reclaimable):
    name = "capacity"

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[int, bool]:
        # Volcano's consumable-capacity quota (`<dim>.deviceclass/<class>` keys): accepted so its
        # documented configuration loads; those keys limit nothing here yet (docs/dra.md)
        args.accept("capacity.DRAConsumableCapacityEnable")
        return (args.get("ancestorReclaimLevel", 0, int),
                args.get("capacity.DynamicResourceAllocationEnable", True, bool))

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.hierarchy = option.enabled("enableHierarchy")
        self.reclaim_levels: int = self.settings[0]
        self.quotas: dict[str, Quota] = {}
        # With SchedulingGatesQueueAdmission: per leaf queue, the opted-in pending tasks its
        # capability admitted (their gate removed, or removal asked for this session) and not
        # placed yet. They keep their room in the queue, so no later pod takes it (Volcano).
        self.reserved: dict[str, dict[str, TaskInfo]] = {}
        for queue in handle.queues.values():
            parent = (queue.parent or ROOT) if self.hierarchy and queue.name != ROOT else None
            self.quotas[queue.name] = Quota.of(queue, queue.name, parent, handle.dims)
        for quota in self.quotas.values():
            if quota.parent in self.quotas:
                self.quotas[quota.parent].children.append(quota.name)
        if self.hierarchy:
            self._lay_out_tree()
        else:
            self._lay_out_flat()
        self.devices = DeviceQuota.of(handle.dra, handle.queues.values(), self._lineage_names) \
            if self.settings[1] else None
        kept = handle.queue_sums()
        if kept is not None:  # the cache's per-queue sums (central.model.queuesums) of `_account_job`'s terms
            for name, sums in kept.items():
                for quota in self._lineage(name):
                    quota.allocated += sums.allocated
                    quota.inqueue += sums.held
                    quota.elastic += sums.elastic
        per_job = kept is None or self.devices is not None or handle.queue_gate_admission
        for job in handle.jobs.values() if per_job else ():
            if kept is None:
                self._account_job(job)
            if self.devices is not None:
                self.devices.account(job)
            if handle.queue_gate_admission:
                for task in job.tasks.values():
                    if task.status == TaskStatus.PENDING and not task.gated and opted_in(task.annotations):
                        self.reserved.setdefault(job.queue, {})[task.uid] = task

    def deserved_shares(self) -> dict[str, np.ndarray]:
        """Each queue's deserved as laid out: within its real capability, at least its guarantee."""
        return {name: quota.deserved for name, quota in self.quotas.items()}

    # --- setup ------------------------------------------------------------------------------

    def _lay_out_flat(self) -> None:
        total = self.handle.total
        guarantees = sum((q.guarantee for q in self.quotas.values()), self.handle.dims.zeros())
        for quota in self.quotas.values():
            quota.real_capability = np.minimum(np.maximum(total - guarantees, 0) + quota.guarantee, quota.capability)
            quota.deserved = np.maximum(np.minimum(quota.deserved, quota.real_capability), quota.guarantee)

    def _lay_out_tree(self) -> None:
        root = self.quotas[ROOT]  # the session always has root
        self._sum_children(root)
        root.real_capability = root.capability.copy()
        self._descend(root)

    def _sum_children(self, quota: Quota) -> None:
        """Root-like parents deserve and guarantee what their children do, at least."""
        for child in quota.children:
            self._sum_children(self.quotas[child])
        if quota.name == ROOT and quota.children:
            quota.deserved = np.sum([self.quotas[c].deserved for c in quota.children], axis=0)
            quota.guarantee = np.sum([self.quotas[c].guarantee for c in quota.children], axis=0)

    def _descend(self, parent: Quota) -> None:
        siblings_guarantee = np.sum([self.quotas[c].guarantee for c in parent.children], axis=0) if parent.children else 0
        for name in parent.children:
            child = self.quotas[name]
            child.capability = np.where(np.isinf(child.capability), parent.capability, child.capability)
            room = np.maximum(parent.real_capability - siblings_guarantee, 0) + child.guarantee
            child.real_capability = np.minimum(room, child.capability)
            child.deserved = np.maximum(np.minimum(child.deserved, child.real_capability), child.guarantee)
            self._descend(child)

    def _account_job(self, job: JobInfo) -> None:
        min_res = job_min_resources(self.handle, job)
        inqueue = self.handle.dims.zeros()
        if job.phase == "Inqueue":
            inqueue = min_res
        elif job.phase == "Running" and job.min_resources is not None and job.ready_num >= job.min_available:
            inqueue = np.maximum(min_res - job.allocated, 0)
        inqueue = less_gated(job, inqueue)
        elastic = np.maximum(job.allocated - min_res, 0)
        for quota in self._lineage(job.queue):
            quota.allocated += job.allocated
            quota.inqueue += inqueue
            quota.elastic += elastic

    def _lineage(self, queue: str) -> list[Quota]:
        """The queue and, with hierarchy, its ancestors up to root."""
        out, seen = [], set()
        name: str | None = queue
        while name in self.quotas and name not in seen:
            seen.add(name)
            out.append(self.quotas[name])
            name = self.quotas[name].parent
        return out

    def _lineage_names(self, queue: str) -> list[str]:
        return [quota.name for quota in self._lineage(queue)]

    def _is_leaf(self, queue: str) -> bool:
        return not self.hierarchy or not self.quotas[queue].children

    # --- extension points -------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if self.hierarchy:
            left, right = self._below_common_ancestor(left, right)
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        lq, rq = self.quotas[left.name], self.quotas[right.name]
        ls, rs = lq.share, rq.share
        if ls != rs:
            return -1 if ls < rs else 1
        l_has, r_has = bool(np.any(lq.deserved > EPSILON)), bool(np.any(rq.deserved > EPSILON))
        return 0 if l_has == r_has else (-1 if l_has else 1)

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        """With hierarchy, victims come first from the queue whose deepest common ancestor with
        the preemptor's queue lies deeper (Volcano's getQueueLevel)."""
        if not self.hierarchy:
            return 0
        ld, rd = self._common_depth(left.name, preemptor.name), self._common_depth(right.name, preemptor.name)
        return -1 if ld > rd else (1 if ld < rd else 0)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status:
        if not queue.is_open or not self._is_leaf(queue.name):
            return refused()
        for q in self._lineage(queue.name):
            used = q.allocated + self._reserved(q.name, task)
            if not less_equal_on(used + task.resreq, q.real_capability, task.resreq):
                return refused(f"queue {q.name}: " + over_share(
                    self.handle.dims.names, used, task.resreq, q.real_capability, "capability"))
        if self.devices is not None and (why := self.devices.refusal(queue.name, [task], with_admitted=False)):
            return refused(why)
        if self.handle.queue_gate_admission and opted_in(task.annotations):
            self.reserved.setdefault(queue.name, {})[task.uid] = task
        return ALLOWED

    def _reserved(self, queue: str, candidate: TaskInfo) -> np.ndarray:
        """What the queue's admitted, unplaced tasks other than `candidate` hold."""
        held = self.handle.dims.zeros()
        for uid, task in self.reserved.get(queue, {}).items():
            if uid != candidate.uid:
                held += task.resreq
        return held

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status:
        if not queue.is_open:
            return refused()
        req = task.resreq
        lineage = self._lineage(queue.name)
        leaf = lineage[0]
        if not less_equal_on(leaf.allocated + req, leaf.real_capability, req):
            return refused()
        if self.devices is not None and (why := self.devices.refusal(queue.name, [task], with_admitted=False)):
            return refused(why)
        levels = lineage[1:1 + self.reclaim_levels] if self.hierarchy else []
        within = any(_within_on_some(q.allocated + req, q.deserved, req)
                     for q in [leaf, *levels] if q is leaf or q.name != ROOT)
        return ALLOWED if within else refused()

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        mine = self._lineage(self.handle.jobs[reclaimer.job_uid].queue)
        victims = []
        left: dict[str, np.ndarray] = {}
        for task in candidates:
            quota = self.quotas.get(self.handle.jobs[task.job_uid].queue)
            if quota is None or not np.any((task.resreq > EPSILON) & (reclaimer.resreq > EPSILON)):
                continue
            allocated = left.setdefault(quota.name, quota.allocated.copy())
            if not np.all(quota.guarantee < allocated - task.resreq + EPSILON):
                continue
            if not _relevant(task.resreq, quota.deserved):
                if self._shares_ancestor(mine, quota) and not _relevant(reclaimer.resreq, mine[0].deserved):
                    continue
            elif not _above_on_some(allocated, quota.deserved, task.resreq):
                continue
            ancestors = self._ancestors_to_check(mine, quota)
            if not all(not _relevant(task.resreq, a.deserved)
                       or _above_on_some(left.setdefault(a.name, a.allocated.copy()), a.deserved, task.resreq)
                       for a in ancestors):
                continue
            for name in {quota.name, *(a.name for a in ancestors)}:
                left[name] -= task.resreq
            victims.append(task)
        return victims

    def job_enqueueable(self, job: JobInfo) -> int:
        queue = self.handle.queues[job.queue]
        if not queue.is_open:
            self.handle.note_job(job, f"queue {queue.name} is {queue.state}")
            return REJECT
        if not self._is_leaf(queue.name):
            self.handle.note_job(job, f"queue {queue.name} is not a leaf queue: jobs run only in leaf queues")
            return REJECT
        if self.devices is not None and (why := self.devices.refusal(
                queue.name, min_claim_tasks(job), with_admitted=True)):
            self.handle.note_job(job, why)
            return REJECT
        if job.min_resources is None:
            if self.devices is not None:
                self.devices.admit(job)
            return PERMIT
        min_res = job_min_resources(self.handle, job)
        for quota in self._lineage(queue.name):
            future = min_res + quota.allocated + quota.inqueue - quota.elastic
            if not less_equal_on(future, quota.real_capability, min_res):
                self.handle.note_job(job, f"queue {quota.name} capacity insufficient")
                return REJECT
        held = less_gated(job, min_res)
        for quota in self._lineage(queue.name):
            quota.inqueue += held
        if self.devices is not None:
            self.devices.admit(job)
        return PERMIT

    # --- helpers ----------------------------------------------------------------------------

    def charge(self, task: TaskInfo, sign: int) -> None:
        job = self.handle.jobs.get(task.job_uid)
        if job is not None:
            for quota in self._lineage(job.queue):
                quota.allocated += sign * task.resreq
            if self.devices is not None:
                self.devices.charge(job.queue, task, sign)
            if sign > 0:  # placed: its room is allocated now, no longer reserved
                self.reserved.get(job.queue, {}).pop(task.uid, None)
            elif self.handle.queue_gate_admission and opted_in(task.annotations):  # undone: reserved again
                self.reserved.setdefault(job.queue, {})[task.uid] = task

    def _ancestors_to_check(self, mine: list[Quota], victim: Quota) -> list[Quota]:
        """The victim queue's ancestors at levels 1..ancestorReclaimLevel, except root and
        those the reclaimer's queue has at the same level."""
        if not self.hierarchy:
            return []
        theirs = self._lineage(victim.name)
        out = []
        for level in range(1, self.reclaim_levels + 1):
            if level >= len(theirs) or theirs[level].name == ROOT:
                continue
            if level < len(mine) and mine[level].name == theirs[level].name:
                continue
            out.append(theirs[level])
        return out

    def _shares_ancestor(self, mine: list[Quota], victim: Quota) -> bool:
        """Do the two queues share an ancestor other than root within ancestorReclaimLevel?"""
        if not self.hierarchy or self.reclaim_levels <= 0:
            return False
        near = {q.name for q in mine[1:1 + self.reclaim_levels]} - {ROOT}
        return any(q.name in near for q in self._lineage(victim.name)[1:1 + self.reclaim_levels])

    def _below_common_ancestor(self, left: QueueInfo, right: QueueInfo) -> tuple[QueueInfo, QueueInfo]:
        lpath = [q.name for q in reversed(self._lineage(left.name))]
        rpath = [q.name for q in reversed(self._lineage(right.name))]
        i = 0
        while i < min(len(lpath), len(rpath)) and lpath[i] == rpath[i]:
            i += 1
        if i >= len(lpath) or i >= len(rpath):
            return left, right
        queues = self.handle.queues
        return queues.get(lpath[i], left), queues.get(rpath[i], right)

    def _common_depth(self, a: str, b: str) -> int:
        """Depth (root = 0) of the deepest ancestor the two queues share, the queues themselves
        left out."""
        apath = [q.name for q in reversed(self._lineage(a)[1:])]
        bpath = [q.name for q in reversed(self._lineage(b)[1:])]
        depth = 0
        for i, (x, y) in enumerate(zip(apath, bpath)):
            if x != y:
                break
            depth = i
        return depth


def _relevant(req: np.ndarray, deserved: np.ndarray) -> bool:
    """Does the request use a dimension the deserved share names?"""
    return bool(np.any((req > EPSILON) & (deserved > EPSILON)))


def _within_on_some(future: np.ndarray, deserved: np.ndarray, req: np.ndarray) -> bool:
    """Volcano's LessEqualPartlyWithDimensionZeroFiltered: on some dimension the request uses
    (and where future and deserved are not both zero), future <= deserved."""
    dims = (req > EPSILON) & ~((future < EPSILON) & (deserved < EPSILON))
    return bool(np.any(future[dims] < deserved[dims] + EPSILON))


def _above_on_some(allocated: np.ndarray, deserved: np.ndarray, req: np.ndarray) -> bool:
    """Volcano's GreaterPartlyWithRelevantDimensions: above deserved on some dimension the
    request uses and the deserved share names."""
    dims = (req > EPSILON) & (deserved > EPSILON)
    return bool(np.any(allocated[dims] > deserved[dims] + EPSILON))
