"""allocate: place the pending tasks of admitted jobs, gang by gang.

1. Collect the jobs to place: admitted (not Pending; without an enqueue action Pending jobs
   are admitted here), valid (JobValid), in an existing queue and with pending tasks that
   request resources, grouped by queue. (Volcano lines up every job; one with nothing to
   place changes nothing when its turn comes, and while only the queue and job being placed
   change their keys, leaving it out changes no decision. With drf's hierarchy a placement
   also moves the keys of sibling queues still in line; Volcano's order then depends on its
   heap's layout, which the left-out jobs' turns would have changed.)
2. Pop a queue (QueueOrder); drop it for the rest of the action if it is Overused. Pop one
   job (JobOrder) and push the queue back, so queues take turns.
3. Place the job's pending tasks in TaskOrder inside one statement (a task held by any
   scheduling gate but the queue-allocation gate alone is not among them): Allocatable must
   pass; a task the queue-allocation gate holds then only has the gate removed (with
   SchedulingGatesQueueAdmission on and the pod opted in) and is placed once it is gone;
   a task whose template already failed to fit is skipped, the placement filters and scores
   nodes, and the task is allocated (fits idle) or pipelined (fits only future idle). Once
   the job is ready and tasks remain, it yields so other jobs get a turn. The pods of one
   template are planned in one batch where the placement can foresee them
   (`Placement.plan`): the same nodes placing them one by one gives.
4. Ready: commit (binds), and the job goes back in line if it still has pending tasks.
   Only pipelined: keep the statement open, reserving the room in this session without
   binding anything. Otherwise: discard, and the gang holds nothing. Bad data met on the
   way faults the job (its statement discarded) and the next job goes on.
A job with a network topology is placed by HyperNode instead (`central.actions.hypernodes`).
"""

from __future__ import annotations

import numpy as np

from central.actions.hypernodes import place_in_hypernodes
from central.framework.action import Action, ActionHandle
from central.framework.ordering import FixedLine
from central.framework.placement import Plan
from central.framework.statement import Statement
from central.model.objects import READY_STATUSES, FitErrors, JobInfo, PodTemplate, QueueInfo, TaskInfo, TaskStatus
from central.model.schedulinggate import opted_in


class Allocate(Action):
    name = "allocate"
    # accepted with no effect: one template view caches predicate results
    arguments = {"predicateErrorCacheEnable": bool}

    def execute(self, handle: ActionHandle) -> None:
        queues, jobs = handle.queue_lines(_admitted_valid_jobs(handle))
        pending: dict[str, FixedLine[TaskInfo]] = {}
        while queues:
            queue = queues.pop()
            if handle.overused(queue):
                continue
            waiting = jobs[queue.name]
            if not waiting:
                continue
            job = waiting.pop()
            tasks = pending.get(job.uid)
            if tasks is None:
                tasks = pending[job.uid] = FixedLine(handle.task_less, (
                    t for t in job.tasks.values()
                    if t.status == TaskStatus.PENDING and not t.best_effort and not t.externally_gated))
            stmt = handle.statement()
            with handle.job_boundary(job, "allocate", stmt):
                if not place_in_hypernodes(handle, stmt, tasks, job, queue, place_tasks):
                    place_tasks(handle, stmt, tasks, job, queue)
                if handle.job_ready(job):
                    stmt.commit()
                    if tasks:
                        waiting.push(job)
                elif not handle.job_pipelined(job):
                    stmt.discard()
            queues.push(queue)


def _admitted_valid_jobs(handle: ActionHandle) -> list[JobInfo]:
    admit_pending = "enqueue" not in handle.actions
    out = []
    for job in handle.restless.values():  # at rest: admitted, valid, nothing pending
        if job.pending_phase:
            if not admit_pending:
                continue
            job.phase = "Inqueue"
        invalid = handle.job_valid(job)
        if invalid:
            handle.note_job(job, invalid)
            continue
        if job.count(TaskStatus.PENDING) > sum(job.best_effort_pending.values()):
            out.append(job)  # a job with nothing to place would only take a turn of its queue
    return out


def place_tasks(handle: ActionHandle, stmt: Statement, tasks: FixedLine[TaskInfo], job: JobInfo, queue: QueueInfo,
                within: np.ndarray | None = None) -> None:
    """Place `tasks` in order onto `stmt`, on the nodes of `within` (a row mask) if given."""
    failed: dict[PodTemplate, FitErrors] = {}
    placement = handle.placement
    plan: Plan | None = None  # where the next pods of one template go (identical pods, placed in a batch)
    unplanned: set[PodTemplate] = set()  # templates whose pods are not planned in this call
    while tasks:
        task = tasks.pop()
        status = handle.allocatable(queue, task)
        if not status.ok:
            job.fit_errors[task.uid] = (f"queue {queue.name} has no room for it: its allocation plus the request exceeds "
                                        f"the queue's deserved share" + (f" ({status.reason})" if status.reason else ""))
            continue
        if task.gated:  # only the queue-allocation gate holds it: the queue admits it, the next cycle places it
            if handle.queue_gate_admission and opted_in(task.annotations):
                handle.ungate(task)
            continue
        if task.template in failed:
            job.fit_errors[task.uid] = failed[task.template]
            continue
        row = plan.take(task) if plan is not None else None
        if row is None:
            if plan is not None and plan.taken == 1:
                unplanned.add(plan.template)  # it ended after its first pod: another would too
            plan = None
            count = _batch(tasks, task, job)
            if count > 1 and task.template not in unplanned and not task.nominated_node:
                plan = placement.plan(task, count, within)
                row = plan.take(task) if plan is not None else None
                if row is None:
                    unplanned.add(task.template)
        if plan is not None and row is not None:
            more = _run_after(handle, tasks, task, job, queue, plan)
            if more:
                run = [task, *tasks.head(len(more))]
                tasks.drop(len(more))
                stmt.allocate_run(run, [handle.nodes[r] for r in (row, *more)])
            else:
                stmt.allocate(task, handle.nodes[row])
        else:
            rows = placement.feasible(task)
            if within is not None:
                rows = rows[within[rows]]
            if not len(rows):
                failed[task.template] = job.fit_errors[task.uid] = placement.fit_errors(task, within)
                if need_continue(job):
                    continue
                break
            row, fits_idle = placement.select(task, rows)
            (stmt.allocate if fits_idle else stmt.pipeline)(task, handle.nodes[row])
        if tasks and handle.job_ready(job):
            break


def _run_after(handle: ActionHandle, tasks: FixedLine[TaskInfo], task: TaskInfo, job: JobInfo, queue: QueueInfo,
               plan: Plan) -> list[int]:
    """The plan's rows for the pods after `task` that the loop would allocate straight after
    it, asking nothing that their allocations change: next in line, of its template, not
    gated, admitted by Allocatable in a row, and before the job can turn ready."""
    limit = min(len(plan.rows) - plan.taken, handle.allocations_to_ready(job) - 1)
    if limit <= 0 or not tasks:
        return []
    same = []
    for other in tasks.head(limit):
        if other.template is not task.template or other.gated:
            break
        same.append(other)
    if not same:
        return []
    admitted = handle.admits_in_row(queue, task, 1 + len(same)) - 1
    return plan.take_more(same[:admitted]) if admitted > 0 else []


def _batch(tasks: FixedLine[TaskInfo], task: TaskInfo, job: JobInfo) -> int:
    """How many pods to plan, `task` first: its template's next in line, one after the other
    (a pod of another template allocated in between ends a plan: task order puts a job's
    roles' pods index by index, so only the run of the largest role's last ones lasts), no
    more than the gang still lacks when it lacks any (it yields once ready)."""
    template = task.template
    count = 1 + tasks.run_length(lambda other: other.template is template)
    lacking = job.min_available - job.ready_num
    return min(count, lacking) if lacking > 0 else count


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
