"""backfill: place BestEffort tasks (no requests) of admitted, valid jobs.

They need no room, only a node that passes the filters; the best-scored one is taken, and
the allocation is committed (bound) as soon as the job is ready, as Volcano's ssn.Allocate.
"""

from __future__ import annotations

from central.framework.session import Session
from central.model.objects import TaskStatus


def backfill(ssn: Session) -> None:
    placement = ssn.placement
    jobs = [job for job in ssn.jobs.values() if any(job.best_effort_pending.values())]
    for job in sorted(jobs, key=lambda j: (j.creation, j.uid)):
        if job.pending_phase or ssn.job_valid(job):
            continue
        for task in [t for t in job.tasks.values() if t.status == TaskStatus.PENDING and t.best_effort]:
            stmt = ssn.statement()
            with ssn.job_boundary(job, "backfill", stmt):
                rows = placement.feasible(task)
                if not len(rows):
                    job.fit_errors[task.uid] = placement.fit_errors(task)
                    stmt.discard()
                    break
                row, _ = placement.select(task, rows)
                stmt.allocate(task, ssn.nodes[row])
                if ssn.job_ready(job):
                    stmt.commit()
            if job.uid in ssn.faulted_jobs:
                break
