"""enqueue: admit Pending PodGroups into their queues (phase Inqueue), round-robin by queue.

Queues are taken in QueueOrder, one job each (JobOrder) before the queue goes back, so one
queue cannot admit all its jobs before another admits one. A job without minResources is
admitted as is; others need every JobEnqueueable vote (proportion, overcommit, sla, ...).
"""

from __future__ import annotations

from central.framework.session import Session


def enqueue(ssn: Session) -> None:
    queues, jobs = ssn.queue_lines(job for job in ssn.jobs.values() if job.pending_phase)
    while queues:
        queue = queues.pop()
        waiting = jobs[queue.name]
        if not waiting:
            continue
        job = waiting.pop()
        with ssn.job_boundary(job, "enqueue"):
            if job.uid not in ssn.faulted_jobs and (job.min_resources is None or ssn.job_enqueueable(job)):
                ssn.job_enqueued(job)
                job.phase = "Inqueue"
        queues.push(queue)
