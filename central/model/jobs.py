"""A Volcano Job (batch.volcano.sh/v1alpha1) expanded into its PodGroup and pods.

This is what Volcano's job controller creates for a job, as pure functions of the parsed
spec (central/model/jobspec.py) so that the controller and `caldera simulate` share them:
- one PodGroup named after the job: minMember = spec.minAvailable, or the sum of replicas;
  minTaskMember = each task's minAvailable (default: its replicas); minResources = the
  requests of the first minMember pods in task order; queue, priorityClassName and networkTopology carried;
- pods `<job>-<task>-<index>` from each task's template, with Volcano's annotations and
  labels, the job's schedulerName (default `volcano`) and priorityClassName where the
  template names none.

    expand_job(job, version, limits) -> (PodGroup, pods)    every pod, for a job read once
    build_podgroup(spec) -> dict                            O(tasks), whatever the replicas
    build_pods(spec, version, names=None) -> list[dict]     only the named pods when given
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from central.errors import InputError
from central.model.jobspec import (
    DEFAULT_LIMITS,
    JobLimits,
    JobSpec,
    TaskSpec,
    clone,
    parse_job,
)
from central.model.parse import GROUP_NAME, QUEUE_NAME, TASK_INDEX, TASK_SPEC
from central.model.podspec import pod_requests
from central.resources.vectors import add_lists, format_value

JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
JOB_VERSION = "volcano.sh/job-version"


def expand_job(job: Mapping[str, Any], version: int = 0,
               limits: JobLimits = DEFAULT_LIMITS) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(PodGroup, pods) for `job`. InputError names the field (e.g. `spec.tasks[1].replicas`)."""
    spec = parse_job(job, limits)
    return build_podgroup(spec), build_pods(spec, version)


def pod_name(spec: JobSpec, task: TaskSpec, index: int) -> str:
    return f"{spec.name}-{task.name}-{index}"


def build_podgroup(spec: JobSpec) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "annotations": dict(spec.carried),
                     "ownerReferences": [_owner(spec)]},
        "spec": {"minMember": spec.min_available, "minTaskMember": {t.name: t.min_available for t in spec.tasks},
                 "queue": spec.queue, "minResources": min_resources(spec),
                 **({"priorityClassName": spec.priority_class} if spec.priority_class else {}),
                 **({"networkTopology": podgroup_topology(spec.network_topology)}
                    if spec.network_topology is not None else {})},
        "status": {"phase": "Pending"},
    }


def podgroup_topology(topology: Mapping[str, Any]) -> dict[str, Any]:
    """The Job's networkTopology as Volcano's job controller writes it on the PodGroup it
    creates: the mode, and the tier by number, or else by name."""
    out: dict[str, Any] = {"mode": topology.get("mode") or "hard"}
    if topology.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = topology["highestTierAllowed"]
    elif topology.get("highestTierName"):
        out["highestTierName"] = topology["highestTierName"]
    return out


def min_resources(spec: JobSpec) -> dict[str, str]:
    """The requests of the first minMember pods in task order. A task's pods share one
    template, so each task's request is read once and added per pod (added, not multiplied,
    so the sum is the same float as pod by pod)."""
    total: dict[str, float] = {}
    left = spec.min_available
    for task in spec.tasks:
        if left <= 0:
            break
        count = min(task.replicas, left)
        left -= count
        if count == 0:
            continue
        try:
            request = pod_requests(task.template["spec"])
        except InputError as err:
            raise InputError(f"spec.tasks[{task.name}].template.{err.where}", err.message) from None
        for _ in range(count):
            total = add_lists(total, request)
    return {n: format_value(n, v) for n, v in sorted(total.items())}


def build_pods(spec: JobSpec, version: int = 0, names: Collection[str] | None = None) -> list[dict[str, Any]]:
    """The job's pods in task order; only those named in `names` when given."""
    return [_pod(spec, task, index, version)
            for task in spec.tasks for index in range(task.replicas)
            if names is None or pod_name(spec, task, index) in names]


def _pod(spec: JobSpec, task: TaskSpec, index: int, version: int) -> dict[str, Any]:
    template = task.template
    meta = clone(template.get("metadata") or {})
    pod_spec = clone(template["spec"])
    pod_spec.setdefault("schedulerName", spec.scheduler_name)
    if spec.priority_class and not pod_spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec.priority_class
    annotations = {**(meta.get("annotations") or {}), **spec.carried,
                   TASK_SPEC: task.name, TASK_INDEX: str(index), GROUP_NAME: spec.name, JOB_NAME: spec.name,
                   QUEUE_NAME: spec.queue, JOB_VERSION: str(version)}
    labels = {**(meta.get("labels") or {}), JOB_NAME: spec.name, JOB_NAMESPACE: spec.namespace,
              TASK_SPEC: task.name, QUEUE_NAME: spec.queue}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**meta, "name": pod_name(spec, task, index), "namespace": spec.namespace,
                     "annotations": annotations, "labels": labels, "ownerReferences": [_owner(spec)]},
        "spec": pod_spec,
        "status": {"phase": "Pending"},
    }


def _owner(spec: JobSpec) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": spec.name, "uid": spec.uid,
            "controller": True}
