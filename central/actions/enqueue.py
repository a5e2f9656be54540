"""enqueue: admit Pending PodGroups into their queues (phase Inqueue), round-robin by queue.

Queues are taken in QueueOrder, one job each (JobOrder) before the queue goes back, so one
queue cannot admit all its jobs before another admits one. A job without minResources is
admitted as is; others need every JobEnqueueable vote (proportion, overcommit, sla, ...).
"""

from __future__ import annotations

from central.framework.ordering import PriorityQueue
from central.framework.session import Session
from central.model.objects import JobInfo, QueueInfo


def enqueue(ssn: Session) -> None:
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_less)
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if not job.pending_phase:
            continue
        if job.queue not in jobs:
            jobs[job.queue] = PriorityQueue(ssn.job_less)
            queues.push(ssn.queues[job.queue])
        jobs[job.queue].push(job)
    while queues:
        queue = queues.pop()
        waiting = jobs[queue.name]
        if not waiting:
            continue
        job = waiting.pop()
        if job.min_resources is None or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.phase = "Inqueue"
        queues.push(queue)
