"""allocate: place the pending tasks of admitted jobs, gang by gang.

1. Collect the jobs to place: admitted (not Pending; without an enqueue action Pending jobs
   are admitted here), valid (JobValid), in an existing queue and with pending tasks that
   request resources, grouped by queue. (Volcano lines up every job; one with nothing to
   place changes nothing when its turn comes, and the lines are ordered by keys that move
   only for the job being placed, so leaving it out changes no decision.)
2. Pop a queue (QueueOrder); drop it for the rest of the action if it is Overused. Pop one
   job (JobOrder) and push the queue back, so queues take turns.
3. Place the job's pending tasks in TaskOrder inside one statement: Allocatable must pass,
   a task whose template already failed to fit is skipped, the placement filters and scores
   nodes, and the task is allocated (fits idle) or pipelined (fits only future idle). Once
   the job is ready and tasks remain, it yields so other jobs get a turn.
4. Ready: commit (binds), and the job goes back in line if it still has pending tasks.
   Only pipelined: keep the statement open, reserving the room in this session without
   binding anything. Otherwise: discard, and the gang holds nothing. Bad data met on the
   way faults the job (its statement discarded) and the next job goes on.
"""

from __future__ import annotations

from central.framework.ordering import PriorityQueue
from central.framework.session import Session
from central.framework.statement import Statement
from central.model.objects import READY_STATUSES, FitErrors, JobInfo, PodTemplate, QueueInfo, TaskInfo, TaskStatus


def allocate(ssn: Session) -> None:
    queues, jobs = ssn.queue_lines(_admitted_valid_jobs(ssn))

    pending: dict[str, PriorityQueue[TaskInfo]] = {}
    while queues:
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        waiting = jobs[queue.name]
        if not waiting:
            continue
        job = waiting.pop()
        tasks = pending.get(job.uid)
        if tasks is None:
            tasks = pending[job.uid] = PriorityQueue(ssn.task_less, (
                t for t in job.tasks.values() if t.status == TaskStatus.PENDING and not t.best_effort))
        stmt = ssn.statement()
        with ssn.job_boundary(job, "allocate", stmt):
            place_tasks(ssn, stmt, tasks, job, queue)
            if ssn.job_ready(job):
                stmt.commit()
                if tasks:
                    waiting.push(job)
            elif not ssn.job_pipelined(job):
                stmt.discard()
        queues.push(queue)


def _admitted_valid_jobs(ssn: Session) -> list[JobInfo]:
    admit_pending = "enqueue" not in ssn.conf.actions
    out = []
    for job in ssn.jobs.values():
        if job.pending_phase:
            if not admit_pending:
                continue
            job.phase = "Inqueue"
        invalid = ssn.job_valid(job)
        if invalid:
            ssn.job_notes[job.uid] = invalid
            continue
        if job.count(TaskStatus.PENDING) > sum(job.best_effort_pending.values()):
            out.append(job)  # a job with nothing to place would only take a turn of its queue
    return out


def place_tasks(ssn: Session, stmt: Statement, tasks: PriorityQueue[TaskInfo], job: JobInfo, queue: QueueInfo) -> None:
    failed: dict[PodTemplate, FitErrors] = {}
    placement = ssn.placement
    while tasks:
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            numbers = ssn.queue_notes.pop(queue.name, "")
            job.fit_errors[task.uid] = (f"queue {queue.name} has no room for it: its allocation plus the request exceeds "
                                        f"the queue's deserved share" + (f" ({numbers})" if numbers else ""))
            continue
        if task.template in failed:
            job.fit_errors[task.uid] = failed[task.template]
            continue
        rows = placement.feasible(task)
        if not len(rows):
            failed[task.template] = job.fit_errors[task.uid] = placement.fit_errors(task)
            if need_continue(job):
                continue
            break
        row, fits_idle = placement.select(task, rows)
        (stmt.allocate if fits_idle else stmt.pipeline)(task, ssn.nodes[row])
        if tasks and ssn.job_ready(job):
            break


def need_continue(job: JobInfo) -> bool:
    """Volcano's NeedContinueAllocating: after a task fits nowhere, may the job's other tasks
    still make it ready? Never when every task is needed; with a job-wide minMember below the
    roles' sum, if the ready tasks and the pending ones of roles that have not failed reach
    it; otherwise unless a failed role holds fewer placed tasks than its minTaskMember."""
    if job.min_available == len(job.tasks):
        return False
    failed_roles = {job.tasks[uid].role for uid in job.fit_errors if uid in job.tasks}
    if job.min_available < sum(job.task_min_available.values()):
        left = sum(n for (role, status), n in job.role_counts.items()
                   if status == TaskStatus.PENDING and role not in failed_roles)
        return job.ready_num + left >= job.min_available
    for role in failed_roles:
        minimum = job.task_min_available.get(role, 0)
        if minimum and sum(job.role_counts.get((role, s), 0) for s in READY_STATUSES) < minimum:
            return False
    return True
