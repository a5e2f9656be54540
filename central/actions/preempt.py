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

from central.actions.dryrun import topology_aware_room
from central.actions.victims import make_room, pending_tasks, starving_jobs
from central.framework.session import Session
from central.framework.statement import Statement
from central.model.objects import PREEMPTABLE_STATUSES, JobInfo, PodTemplate, TaskInfo

REASON = "PreemptionByScheduler: preempted to make room for {}"


def preempt(ssn: Session) -> None:
    _, starving = ssn.queue_lines(starving_jobs(ssn))
    for jobs in starving.values():
        under_request = []
        while jobs:
            job = jobs.pop()
            under_request.append(job)
            stmt = ssn.statement()
            with ssn.job_boundary(job, "preempt", stmt):
                if _between_jobs(ssn, stmt, job):
                    jobs.push(job)
        for job in under_request:
            if job.uid not in ssn.faulted_jobs:
                _within_job(ssn, job)


def _between_jobs(ssn: Session, stmt: Statement, job: JobInfo) -> bool:
    """Preempt other jobs of the queue for `job`; True if it got room and may want more."""
    tasks = pending_tasks(ssn, job)
    assigned = False
    no_room: set[PodTemplate] = set()  # a template that found no room will not find it for a twin
    while tasks and ssn.job_starving(job):
        task = tasks.pop()
        if task.preempt_never or task.template in no_room:
            continue

        def eligible(victim: TaskInfo, task: TaskInfo = task) -> bool:
            return (_preemptable(victim, task) and victim.job_uid != job.uid
                    and victim.job_uid in ssn.jobs and ssn.jobs[victim.job_uid].queue == job.queue)

        if _make_room(ssn, stmt, task, eligible):
            assigned = True
        else:
            no_room.add(task.template)
    if ssn.job_pipelined(job):
        stmt.commit()
        return assigned and bool(tasks)
    stmt.discard()
    return False


def _within_job(ssn: Session, job: JobInfo) -> None:
    tasks = pending_tasks(ssn, job)
    while tasks:
        task = tasks.pop()
        if task.preempt_never:
            continue
        stmt = ssn.statement()
        placed = False
        with ssn.job_boundary(job, "preempt", stmt):
            placed = _make_room(ssn, stmt, task, lambda v, task=task: _preemptable(v, task) and v.job_uid == job.uid)
            stmt.commit()
        if not placed:
            return


def _make_room(ssn: Session, stmt, task: TaskInfo, eligible) -> bool:
    queue = ssn.queues[ssn.jobs[task.job_uid].queue]
    arguments = ssn.conf.action_arguments("preempt")
    if arguments.get("enableTopologyAwarePreemption", False):
        return topology_aware_room(ssn, stmt, task, eligible, arguments, REASON.format(task.uid),
                                   lambda: ssn.allocatable(queue, task))
    return make_room(ssn, stmt, task, eligible, "preemptable", REASON.format(task.uid),
                     lambda: ssn.allocatable(queue, task))


def _preemptable(victim: TaskInfo, preemptor: TaskInfo) -> bool:
    """Bound or Running and preemptable; a BestEffort preemptor takes only BestEffort victims
    (a BestEffort victim frees a pod slot, which may be all the preemptor lacks)."""
    if victim.status not in PREEMPTABLE_STATUSES or not victim.preemptable:
        return False
    return victim.best_effort or not preemptor.best_effort
