"""reclaim: a starving queue takes back what other queues borrowed beyond their share.

Queues go in QueueOrder, overused ones are skipped. For a queue's starving job (JobOrder),
its pending tasks (TaskOrder, preemptionPolicy not Never, Preemptive for the queue) each try
to make room among the Running, preemptable tasks of other queues whose `reclaimable` is not
false, as the Reclaimable tiers vote: the first tier with an opinion decides, as in Volcano,
so proportion's or capacity's "only what a queue holds above its deserved share" counts
only when their tier is the one that decides (where gang and conformance vote first,
they decide). The job's statement commits only if the job is then pipelined; otherwise
nothing is evicted.
"""

from __future__ import annotations

from central.actions.victims import make_room, pending_tasks, starving_jobs
from central.framework.action import Action, ActionHandle
from central.framework.statement import Statement
from central.model.objects import JobInfo, PodTemplate, QueueInfo, TaskInfo, TaskStatus

REASON = "PreemptionByScheduler: reclaimed by queue {} for {}"


class Reclaim(Action):
    name = "reclaim"
    # accepted with no effect: one template view caches predicate results
    arguments = {"predicateErrorCacheEnable": bool}

    def execute(self, handle: ActionHandle) -> None:
        queues, starving = handle.queue_lines(starving_jobs(handle))
        while queues:
            queue = queues.pop()
            jobs = starving[queue.name]
            if handle.overused(queue) or not jobs:
                continue
            job = jobs.pop()
            stmt = handle.statement()
            with handle.job_boundary(job, "reclaim", stmt):
                _reclaim_for(handle, stmt, queue, job)
            queues.push(queue)


def _reclaim_for(handle: ActionHandle, stmt: Statement, queue: QueueInfo, job: JobInfo) -> None:
    tasks = pending_tasks(handle, job)
    no_room: set[PodTemplate] = set()  # a template that found no room will not find it for a twin
    while tasks and handle.job_starving(job):
        task = tasks.pop()
        if task.preempt_never or task.template in no_room or not handle.preemptive(queue, task).ok:
            continue
        if not make_room(handle, stmt, task, lambda v: _reclaimable(handle, v, queue), "reclaimable",
                         REASON.format(queue.name, task.uid), lambda: True):
            no_room.add(task.template)
    if handle.job_pipelined(job):
        stmt.commit()
    else:
        stmt.discard()


def _reclaimable(handle: ActionHandle, victim: TaskInfo, queue: QueueInfo) -> bool:
    if victim.status != TaskStatus.RUNNING or not victim.preemptable:
        return False
    victim_job = handle.jobs.get(victim.job_uid)
    if victim_job is None or victim_job.queue == queue.name:
        return False
    return handle.queues[victim_job.queue].reclaimable
