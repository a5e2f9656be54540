"""priority: higher priority tasks and jobs first; victims must have lower priority."""

from __future__ import annotations

from central.framework import extension as ext
from central.framework.plugin import Plugin
from central.model.objects import JobInfo, TaskInfo, TaskStatus


class Priority(Plugin, ext.JobOrder, ext.TaskOrder, ext.JobStarving, ext.Preemptable):
    name = "priority"

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        return _higher_first(left.priority, right.priority)

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        lp, rp = left.priority, right.priority
        return -1 if lp > rp else (1 if lp < rp else 0)  # _higher_first, inline: every heap comparison asks

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        jobs = self.handle.jobs
        preemptor_job = jobs[preemptor.job_uid]
        victims = []
        for task in candidates:
            if task.job_uid != preemptor.job_uid:
                victim_job = jobs.get(task.job_uid)
                if victim_job is not None and victim_job.priority < preemptor_job.priority:
                    victims.append(task)
            elif task.priority < preemptor.priority:
                victims.append(task)
        return victims

    def job_starving(self, job: JobInfo) -> bool:
        return job.ready_num + job.count(TaskStatus.PIPELINED) < len(job.tasks)


def _higher_first(left: int, right: int) -> int:
    return -1 if left > right else (1 if left < right else 0)
