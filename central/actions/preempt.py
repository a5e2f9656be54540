"""preempt: starving jobs take resources from lower-priority work in their own queue.

1. Preemptors are the admitted, valid jobs that are starving (JobStarving), per queue in
   JobOrder.
2. Between jobs: for each preemptor job, one statement; its pending tasks (TaskOrder) each
   try to make room (see `victims.make_room`) among Bound/Running, preemptable tasks of
   other jobs in the same queue, while the job is still starving. Tasks with
   preemptionPolicy Never do not preempt; a BestEffort preemptor takes only BestEffort
   victims, any other preemptor takes BestEffort ones too. The statement commits only if the job is then pipelined (gang-complete).
3. Within a job: a starving job's pending tasks may take from its own lower-priority tasks,
   one statement per task.
Evictions carry a DisruptionTarget-style reason; the pipelined preemptor is nominated to its
node, and the next cycle's allocate tries that node first. With the action argument
`enableTopologyAwarePreemption`, victims are chosen by a dry run with reprieve instead
(see `central.actions.dryrun`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.actions.dryrun import topology_aware_room
from central.actions.victims import VictimFilter, make_room, pending_tasks, starving_jobs
from central.framework.action import Action, ActionHandle
from central.framework.statement import Statement
from central.model.objects import PREEMPTABLE_STATUSES, JobInfo, PodTemplate, TaskInfo

REASON = "PreemptionByScheduler: preempted to make room for {}"


class Preempt(Action):
    name = "preempt"
    # `predicateErrorCacheEnable` and `topologyAwarePreemptWorkerNum` are accepted and have no
    # effect (one template view caches predicate results; dry runs are sequential)
    arguments = {"predicateErrorCacheEnable": bool, "enableTopologyAwarePreemption": bool,
                 "topologyAwarePreemptWorkerNum": int, "minCandidateNodesPercentage": int,
                 "minCandidateNodesAbsolute": int, "maxCandidateNodesAbsolute": int}

    def execute(self, handle: ActionHandle) -> None:
        arguments: Mapping[str, Any] = self.settings
        _, starving = handle.queue_lines(starving_jobs(handle))
        for jobs in starving.values():
            under_request = []
            while jobs:
                job = jobs.pop()
                under_request.append(job)
                stmt = handle.statement()
                with handle.job_boundary(job, "preempt", stmt):
                    if _between_jobs(handle, arguments, stmt, job):
                        jobs.push(job)
            for job in under_request:
                if not handle.is_faulted(job):
                    _within_job(handle, arguments, job)


def _between_jobs(handle: ActionHandle, arguments: Mapping[str, Any], stmt: Statement, job: JobInfo) -> bool:
    """Preempt other jobs of the queue for `job`; True if it got room and may want more."""
    tasks = pending_tasks(handle, job)
    assigned = False
    no_room: set[PodTemplate] = set()  # a template that found no room will not find it for a twin
    while tasks and handle.job_starving(job):
        task = tasks.pop()
        if task.preempt_never or task.template in no_room:
            continue

        def eligible(victim: TaskInfo, task: TaskInfo = task) -> bool:
            return (_preemptable(victim, task) and victim.job_uid != job.uid
                    and victim.job_uid in handle.jobs and handle.jobs[victim.job_uid].queue == job.queue)

        if _make_room(handle, arguments, stmt, task, eligible):
            assigned = True
        else:
            no_room.add(task.template)
    if handle.job_pipelined(job):
        stmt.commit()
        return assigned and bool(tasks)
    stmt.discard()
    return False


def _within_job(handle: ActionHandle, arguments: Mapping[str, Any], job: JobInfo) -> None:
    tasks = pending_tasks(handle, job)
    while tasks:
        task = tasks.pop()
        if task.preempt_never:
            continue
        stmt = handle.statement()
        placed = False
        with handle.job_boundary(job, "preempt", stmt):
            placed = _make_room(handle, arguments, stmt, task, _own_job_victims(task, job))
            stmt.commit()
        if not placed:
            return


def _make_room(handle: ActionHandle, arguments: Mapping[str, Any], stmt: Statement, task: TaskInfo,
               eligible: VictimFilter) -> bool:
    queue = handle.queues[handle.jobs[task.job_uid].queue]

    def may_place() -> bool:
        return handle.allocatable(queue, task).ok

    if arguments.get("enableTopologyAwarePreemption", False):
        return topology_aware_room(handle, stmt, task, eligible, arguments, REASON.format(task.uid), may_place)
    return make_room(handle, stmt, task, eligible, "preemptable", REASON.format(task.uid), may_place)


def _own_job_victims(task: TaskInfo, job: JobInfo) -> VictimFilter:
    def eligible(victim: TaskInfo) -> bool:
        return _preemptable(victim, task) and victim.job_uid == job.uid
    return eligible


def _preemptable(victim: TaskInfo, preemptor: TaskInfo) -> bool:
    """Bound or Running and preemptable; a BestEffort preemptor takes only BestEffort victims
    (a BestEffort victim frees a pod slot, which may be all the preemptor lacks)."""
    if victim.status not in PREEMPTABLE_STATUSES or not victim.preemptable:
        return False
    return victim.best_effort or not preemptor.best_effort
