"""The pod half of a job's sync: which pods go, which are made, and how they are built.

    surplus_pods(spec, pods) -> list[str]            pods beyond their task's replicas, or of a task that is gone
    missing_pods(spec, pods) -> dict[str, TaskSpec]  pod name -> task, for every replica without a pod
    dependencies_met(spec, task, pods) -> bool       dependsOn: the named tasks have minAvailable pods ready
    build_job_pods(job, spec, names, version)        the named pods, edited by the job's plugins, claims mounted
    tally(pods, deleting, created) -> Tally          live pods per phase and per task, pods going away

A task with dependsOn waits until the tasks it names (all of them, or any with `iteration:
any`) have minAvailable pods Running and Ready, or Succeeded. Only missing pods are built:
a pod that exists is never rebuilt from its template.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from central.controllers.job_policies import PodFacts, is_ready
from central.controllers.job_volumes import mount_claims
from central.controllers.jobplugins import edit_pods
from central.model.jobs import build_pods, pod_name
from central.model.jobspec import JobSpec, TaskSpec


def surplus_pods(spec: JobSpec, pods: Collection[PodFacts]) -> list[str]:
    replicas = {t.name: t.replicas for t in spec.tasks}
    return [p.name for p in pods if p.task not in replicas or p.pod_index >= replicas[p.task]]


def missing_pods(spec: JobSpec, pods: Mapping[str, PodFacts]) -> dict[str, TaskSpec]:
    return {
        name: task
        for task in spec.tasks
        for i in range(task.replicas)
        if (name := pod_name(spec, task, i)) not in pods
    }


def dependencies_met(spec: JobSpec, task: TaskSpec, pods: Collection[PodFacts]) -> bool:
    if not task.depends_on:
        return True
    met = [_task_ready(spec, name, pods) for name in task.depends_on]
    return any(met) if task.depends_on_any else all(met)


def _task_ready(spec: JobSpec, name: str, pods: Collection[PodFacts]) -> bool:
    task = spec.task(name)
    needed = task.min_available if task is not None else 1
    ready = sum(1 for p in pods if p.task == name and not p.terminating and is_ready(p))
    return ready >= needed


def build_job_pods(
    job: Mapping[str, Any], spec: JobSpec, names: Collection[str], version: int, group: str | None = None
) -> list[dict[str, Any]]:
    """The named pods as the spec makes them, edited by the job's plugins, with the job's claims mounted."""
    if not names:
        return []
    built = edit_pods(job, build_pods(spec, version, names, group))
    for pod in built:
        mount_claims(spec, pod)
    return built


POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


@dataclass(frozen=True)
class Tally:
    phases: dict[str, int]  # live pods per phase (a phase not in POD_PHASES counts as Unknown)
    tasks: dict[str, dict[str, int]]  # live pods per task, then per phase
    terminating: int  # pods going away: being deleted already, or deleted in this step

    @property
    def unstopped(self) -> int:
        return self.phases["Pending"] + self.phases["Running"] + self.phases["Unknown"] + self.terminating


def tally(pods: Iterable[PodFacts], deleting: Collection[str], created: Iterable[PodFacts]) -> Tally:
    """Live pods are those not being deleted, with the ones created in this step (Pending)."""
    phases = dict.fromkeys(POD_PHASES, 0)
    tasks: dict[str, dict[str, int]] = {}
    terminating = 0
    for pod in pods:
        if pod.terminating or pod.name in deleting:
            terminating += 1
        else:
            _count(pod, phases, tasks)
    for pod in created:
        _count(pod, phases, tasks)
    return Tally(phases, tasks, terminating)


def _count(pod: PodFacts, phases: dict[str, int], tasks: dict[str, dict[str, int]]) -> None:
    phases[pod.phase if pod.phase in phases else "Unknown"] += 1
    by_phase = tasks.setdefault(pod.task, {})
    by_phase[pod.phase] = by_phase.get(pod.phase, 0) + 1
