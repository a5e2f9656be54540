"""gang: a job runs only when at least minAvailable of its tasks can (all-or-nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from central.framework import extension as ext
from central.framework.plugin import PERMIT, REJECT, Plugin
from central.model.objects import JobInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle


def _role_valid(job: JobInfo, role: str) -> int:
    """The role's valid tasks as Volcano counts them: ready, pipelined or pending."""
    counts = job.role_counts
    return (job.role_ready.get(role, 0) + counts.get((role, TaskStatus.PIPELINED), 0)
            + counts.get((role, TaskStatus.PENDING), 0))


def roles_ready(job: JobInfo, pipelined: bool = False) -> bool:
    """Volcano's CheckTaskReady/CheckTaskPipelined: every role reaches its minTaskMember."""
    if not job.task_min_available or job.min_available < job.task_min_total:
        return True
    for role, minimum in job.task_min_available.items():
        have = job.role_ready.get(role, 0) + job.best_effort_pending.get(role, 0)
        if pipelined:
            have += job.role_counts.get((role, TaskStatus.PIPELINED), 0)
        if have < minimum:
            return False
    return True


def keep_gangs(jobs: Mapping[str, JobInfo], candidates: list[TaskInfo]) -> list[TaskInfo]:
    """The candidates whose eviction leaves every job at or above minAvailable ready tasks,
    taken in the order given (so put the least important first)."""
    spare: dict[str, int] = {}
    victims = []
    for task in candidates:
        job = jobs.get(task.job_uid)
        if job is None:
            continue
        left = spare.setdefault(job.uid, job.ready_num - job.min_available)
        if left > 0:
            spare[job.uid] = left - 1
            victims.append(task)
    return victims


def _best_effort(job: JobInfo) -> int:
    """Its pending best-effort pods, which count as ready (they need nothing placed)."""
    return sum(job.best_effort_pending.values()) if job.best_effort_pending else 0


def job_ready(job: JobInfo) -> bool:
    if job.ready + _best_effort(job) < job.min_available:
        return False
    return not job.task_min_available or roles_ready(job)  # (orderings ask often: no call for plain gangs)


class Gang(Plugin, ext.JobOrder, ext.JobValid, ext.JobReady,
           ext.JobPipelined, ext.JobStarving, ext.Preemptable, ext.Reclaimable, ext.VictimGuard, ext.SessionClose):
    name = "gang"
    keeps_gangs = True  # gangpreempt and gangreclaim evict whole gangs and keep the rest intact themselves
    valid_by_state = True  # job_valid reads the job's counts and PodGroup only
    closes_by_state = True  # its conditions: from the job's counts, notes and fit errors

    def job_valid(self, job: JobInfo) -> str | None:
        for role, minimum in job.task_min_available.items():
            if _role_valid(job, role) < minimum:
                return f"NotEnoughPodsOfTask: not enough valid pods of task {role!r} for gang-scheduling"
        valid = job.ready + job.count(TaskStatus.PIPELINED, TaskStatus.PENDING)
        if valid < job.min_available:
            return f"NotEnoughTasks: not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return job_ready(job)

    def allocations_to_ready(self, job: JobInfo) -> int:
        return max(1, job.min_available - job.ready - _best_effort(job))

    def job_pipelined(self, job: JobInfo) -> int:
        occupied = job.ready_num + job.count(TaskStatus.PIPELINED)
        return PERMIT if roles_ready(job, pipelined=True) and occupied >= job.min_available else REJECT

    def job_starving(self, job: JobInfo) -> bool:
        return job.ready_num + job.count(TaskStatus.PIPELINED) < job.min_available

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        left_ready, right_ready = job_ready(left), job_ready(right)
        if left_ready == right_ready:
            return 0
        return 1 if left_ready else -1

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        return keep_gangs(self.handle.jobs, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        return keep_gangs(self.handle.jobs, candidates)

    # Where gang votes (Preemptable or Reclaimable, as Volcano's defaults have it), victims from
    # other jobs never take a job below its minAvailable, whatever the tiers decided: a later
    # tier (drf) could otherwise strand a partial gang after gang's veto ended the first tier.
    # Caldera's, deliberately; a configuration that turns gang's vote off gets Volcano's rules.

    def guard_victims(self, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        return [v for v in victims if v.job_uid == preemptor.job_uid] + keep_gangs(
            self.handle.jobs, [v for v in victims if v.job_uid != preemptor.job_uid])

    def may_lose(self, preemptor: TaskInfo, victim: TaskInfo) -> bool:
        job = self.handle.jobs[victim.job_uid]
        return victim.job_uid == preemptor.job_uid or job.ready_num > job.min_available

    def on_session_close(self) -> None:
        handle = self.handle
        for job in handle.closing_jobs():  # the others keep their condition (a function of their state)
            if not job.tasks:
                continue
            if job_ready(job):
                handle.set_condition(job, "Scheduled", "tasks in gang are ready to be scheduled", "")
                continue
            if _whole_while_releasing(job):
                continue
            schedulable = job.ready_num + sum(
                1 for t in job.tasks.values() if t.status == TaskStatus.PENDING and handle.placed_then_discarded(t))
            message = f"{job.min_available - schedulable}/{len(job.tasks)} tasks in gang unschedulable: {fit_error(handle, job)}"
            handle.set_condition(job, "Unschedulable", "NotEnoughResources", message)


def _whole_while_releasing(job: JobInfo) -> bool:
    """Volcano's rule: a gang with nothing left to place whose pods being deleted still hold
    their nodes is whole until they go; no NotEnoughResources for its terminating window."""
    if job.count(TaskStatus.PENDING, TaskStatus.PIPELINED) or not job.counts.get(TaskStatus.RELEASING):
        return False
    releasing = sum(1 for t in job.tasks.values() if t.status == TaskStatus.RELEASING and t.node)
    scheduled = job.count(TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    return releasing > 0 and scheduled + releasing >= job.min_available


def fit_error(handle: Handle, job: JobInfo) -> str:
    """Volcano's JobInfo.FitError, followed by the distinct node-level reasons."""
    histogram = {status.name.capitalize(): n for status, n in job.counts.items() if n}
    histogram["minAvailable"] = job.min_available
    text = "pod group is not ready, " + _histogram(histogram)
    note = handle.job_note(job)
    if note is not None:
        text += f"; {note}"
    pending: dict[str, int] = {}
    for task in job.tasks.values():
        if task.status == TaskStatus.PENDING:
            reason = "Unschedulable" if task.uid in job.fit_errors else (
                "Schedulable" if handle.placed_then_discarded(task) else "Undetermined")
            pending[reason] = pending.get(reason, 0) + 1
    if pending:
        text += "; Pending: " + _histogram(pending)
    node_reasons = sorted({str(e) for e in job.fit_errors.values()})
    if node_reasons:
        text += ". " + " ".join(node_reasons)
    return text


def _histogram(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

