"""enqueue: admit Pending PodGroups into their queues (phase Inqueue), round-robin by queue.

Queues are taken in QueueOrder, one job each (JobOrder) before the queue goes back, so one
queue cannot admit all its jobs before another admits one. A job without minResources is
admitted as is; others need every JobEnqueueable vote (proportion, overcommit, sla, ...).
"""

from __future__ import annotations

from central.framework.action import Action, ActionHandle


class Enqueue(Action):
    name = "enqueue"

    def execute(self, handle: ActionHandle) -> None:
        queues, jobs = handle.queue_lines(job for job in handle.restless.values() if job.pending_phase)
        while queues:
            queue = queues.pop()
            waiting = jobs[queue.name]
            if not waiting:
                continue
            job = waiting.pop()
            with handle.job_boundary(job, "enqueue"):
                if not handle.is_faulted(job) and (job.min_resources is None or handle.job_enqueueable(job)):
                    handle.job_enqueued(job)
                    job.phase = "Inqueue"
            queues.push(queue)
