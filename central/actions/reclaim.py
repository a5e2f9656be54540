"""reclaim: a starving queue takes back what other queues borrowed beyond their share.

Queues go in QueueOrder, overused ones are skipped. For a queue's starving job (JobOrder),
its pending tasks (TaskOrder, preemptionPolicy not Never, Preemptive for the queue) each try
to make room among the Running, preemptable tasks of other queues whose `reclaimable` is not
false, as the Reclaimable plugins allow (proportion and capacity only give up what a queue
holds above its deserved share, and they are asked before every eviction, whatever the
tiers voted). The job's statement commits only if the job is then pipelined; otherwise
nothing is evicted.
"""

from __future__ import annotations

from central.actions.victims import make_room, pending_tasks, starving_jobs
from central.framework.session import Session
from central.framework.statement import Statement
from central.model.objects import JobInfo, PodTemplate, QueueInfo, TaskInfo, TaskStatus

REASON = "PreemptionByScheduler: reclaimed by queue {} for {}"


def reclaim(ssn: Session) -> None:
    queues, starving = ssn.queue_lines(starving_jobs(ssn))
    while queues:
        queue = queues.pop()
        jobs = starving[queue.name]
        if ssn.overused(queue) or not jobs:
            continue
        job = jobs.pop()
        stmt = ssn.statement()
        with ssn.job_boundary(job, "reclaim", stmt):
            _reclaim_for(ssn, stmt, queue, job)
        queues.push(queue)


def _reclaim_for(ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo) -> None:
    tasks = pending_tasks(ssn, job)
    no_room: set[PodTemplate] = set()  # a template that found no room will not find it for a twin
    while tasks and ssn.job_starving(job):
        task = tasks.pop()
        if task.preempt_never or task.template in no_room or not ssn.preemptive(queue, task):
            continue
        if not make_room(ssn, stmt, task, lambda v: _reclaimable(ssn, v, queue), "reclaimable",
                         REASON.format(queue.name, task.uid), lambda: True, ssn.can_give_up):
            no_room.add(task.template)
    if ssn.job_pipelined(job):
        stmt.commit()
    else:
        stmt.discard()


def _reclaimable(ssn: Session, victim: TaskInfo, queue: QueueInfo) -> bool:
    if victim.status != TaskStatus.RUNNING or not victim.preemptable:
        return False
    victim_job = ssn.jobs.get(victim.job_uid)
    if victim_job is None or victim_job.queue == queue.name:
        return False
    return ssn.queues[victim_job.queue].reclaimable
