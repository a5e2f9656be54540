"""backfill: place BestEffort tasks (no requests) of admitted, valid jobs.

They need no room, only a node that passes the filters; the best-scored one is taken, and
the allocation is committed (bound) as soon as the job is ready, as Volcano's handle.Allocate.
"""

from __future__ import annotations

from central.framework.action import Action, ActionHandle
from central.model.objects import TaskStatus


class Backfill(Action):
    name = "backfill"
    # accepted with no effect: one template view caches predicate results
    arguments = {"predicateErrorCacheEnable": bool}

    def execute(self, handle: ActionHandle) -> None:
        placement = handle.placement
        jobs = [job for job in handle.restless.values() if any(job.best_effort_pending.values())]
        for job in sorted(jobs, key=lambda j: (j.creation, j.uid)):
            if job.pending_phase or handle.job_valid(job):
                continue
            for task in [t for t in job.tasks.values() if t.status == TaskStatus.PENDING and t.best_effort and not t.gated]:
                stmt = handle.statement()
                with handle.job_boundary(job, "backfill", stmt):
                    rows = placement.feasible(task)
                    if not len(rows):
                        job.fit_errors[task.uid] = placement.fit_errors(task)
                        stmt.discard()
                        break
                    row, _ = placement.select(task, rows)
                    stmt.allocate(task, handle.nodes[row])
                    if handle.job_ready(job):
                        stmt.commit()
                if handle.is_faulted(job):
                    break
