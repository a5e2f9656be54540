"""gangreclaim: a starving queue takes back, gang by gang, what other queues borrowed.

Volcano's gangreclaim (v1.15), with gangpreempt's arguments (`maxDomains`,
`allowWholeBundle`): queues in QueueOrder, overused ones skipped, each one's starving jobs in
JobOrder, one statement per job, whose pending tasks must be Preemptive for the queue.
Victims are Running, preemptable tasks of jobs of other queues whose `reclaimable` is not
false and whose job is preemptable (a PodGroup's volcano.sh/preemptable, when set); the
Reclaimable tiers vote as in reclaim (proportion's or capacity's deserved share), less the
votes that only keep gangs at minAvailable. How victims are chosen: `central.actions.gangs`.
The statement commits only if the job is then pipelined; otherwise nothing is evicted.
"""

from __future__ import annotations

from central.actions.gangs import ARGUMENTS, TaskFilter, evict_for, job_preemptable, needed_tasks
from central.actions.victims import starving_jobs
from central.framework.action import Action, ActionHandle
from central.model.objects import QueueInfo, TaskInfo, TaskStatus

REASON = "PreemptionByScheduler: reclaimed (whole gangs) by queue {} for {}"


class GangReclaim(Action):
    name = "gangreclaim"
    arguments = ARGUMENTS

    def execute(self, handle: ActionHandle) -> None:
        queues, starving = handle.queue_lines(starving_jobs(handle))
        while queues:
            queue = queues.pop()
            if handle.overused(queue):
                continue
            jobs = starving[queue.name]
            while jobs:
                job = jobs.pop()
                if not all(handle.preemptive(queue, t).ok for t in needed_tasks(handle, job)):
                    continue
                stmt = handle.statement()
                with handle.job_boundary(job, self.name, stmt):
                    if evict_for(handle, stmt, job, queue, "reclaimable", _victim_of(handle, queue),
                                 REASON.format(queue.name, job.uid), self.settings) and handle.job_pipelined(job):
                        stmt.commit()
                    else:
                        stmt.discard()


def _victim_of(handle: ActionHandle, queue: QueueInfo) -> TaskFilter:
    def eligible(task: TaskInfo) -> bool:
        if task.status != TaskStatus.RUNNING or not task.preemptable:
            return False
        job = handle.jobs.get(task.job_uid)
        return (job is not None and job.queue != queue.name and handle.queues[job.queue].reclaimable
                and job_preemptable(job))
    return eligible
