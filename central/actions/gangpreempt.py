"""gangpreempt: starving jobs take room from lower-priority gangs of their queue, gang by gang.

Volcano's gangpreempt (v1.15), with its arguments `maxDomains` (HyperNode domains scanned per
preemptor, default 8) and `allowWholeBundle` (may whole gangs be victims, default true):
queues in QueueOrder, each one's starving jobs (admitted, valid, JobStarving) in JobOrder,
one statement per job. Victims are Bound or Running, preemptable tasks of other jobs of the
same queue whose job has a lower priority and is preemptable (a PodGroup's
volcano.sh/preemptable, when set). How victims are chosen: `central.actions.gangs`. The
statement commits only if the job is then pipelined; otherwise nothing is evicted.
"""

from __future__ import annotations

from central.actions.gangs import ARGUMENTS, TaskFilter, evict_for, job_preemptable
from central.actions.victims import starving_jobs
from central.framework.action import Action, ActionHandle
from central.model.objects import PREEMPTABLE_STATUSES, JobInfo, TaskInfo

REASON = "PreemptionByScheduler: preempted (whole gangs) to make room for {}"


class GangPreempt(Action):
    name = "gangpreempt"
    arguments = ARGUMENTS

    def execute(self, handle: ActionHandle) -> None:
        queues, starving = handle.queue_lines(starving_jobs(handle))
        while queues:
            queue = queues.pop()
            jobs = starving[queue.name]
            while jobs:
                job = jobs.pop()
                stmt = handle.statement()
                with handle.job_boundary(job, self.name, stmt):
                    if evict_for(handle, stmt, job, queue, "preemptable", _victim_of(handle, job),
                                 REASON.format(job.uid), self.settings) and handle.job_pipelined(job):
                        stmt.commit()
                    else:
                        stmt.discard()


def _victim_of(handle: ActionHandle, preemptor: JobInfo) -> TaskFilter:
    def eligible(task: TaskInfo) -> bool:
        if task.status not in PREEMPTABLE_STATUSES or not task.preemptable:
            return False
        job = handle.jobs.get(task.job_uid)
        return (job is not None and job.uid != preemptor.uid and job.queue == preemptor.queue
                and job.priority < preemptor.priority and job_preemptable(job))
    return eligible
