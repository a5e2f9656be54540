"""A Volcano Job (batch.volcano.sh/v1alpha1) expanded into its PodGroup and pods.

This is what Volcano's job controller creates for a job, as a pure function so that the
controller and `caldera simulate` share it:
- one PodGroup named after the job: minMember = spec.minAvailable, or the sum of replicas;
  minTaskMember = each task's minAvailable (default: its replicas); minResources = the
  requests of the first minMember pods in task order; queue and priorityClassName carried;
- pods `<job>-<task>-<index>` from each task's template, with Volcano's annotations and
  labels, the job's schedulerName (default `volcano`) and priorityClassName where the
  template names none.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from central.api.resources import add_lists, format_value
from central.errors import InputError
from central.model.fields import metadata, typed
from central.model.parse import GROUP_NAME, QUEUE_NAME, TASK_INDEX, TASK_SPEC
from central.model.podspec import pod_requests

JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
JOB_VERSION = "volcano.sh/job-version"
DEFAULT_SCHEDULER = "volcano"


@dataclass(frozen=True)
class JobLimits:
    """How many pods one Job may expand to. Volcano bounds neither (a 1 KB job can ask for
    10^9 pods); admission refuses jobs beyond these, and expand_job never builds more, so a
    job that bypassed admission (a manifest in `simulate`) costs no more than an admitted one."""

    max_tasks: int = 100
    max_replicas_per_task: int = 10_000
    max_replicas: int = 10_000  # all tasks together


DEFAULT_LIMITS = JobLimits()


def expand_job(job: Mapping[str, Any], version: int = 0,
               limits: JobLimits = DEFAULT_LIMITS) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(PodGroup, pods) for `job`. InputError names the field (e.g. `spec.tasks[1].replicas`)."""
    namespace, name = metadata(job, namespaced=True)
    spec = job.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError("spec", "is required")
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise InputError("spec.tasks", "a job needs at least one task")
    if len(tasks) > limits.max_tasks:
        raise InputError("spec.tasks", f"{len(tasks)} tasks exceed the limit of {limits.max_tasks} per job")
    queue = typed(spec.get("queue") or "default", str, "spec.queue")
    scheduler = typed(spec.get("schedulerName") or DEFAULT_SCHEDULER, str, "spec.schedulerName")
    priority_class = typed(spec.get("priorityClassName") or "", str, "spec.priorityClassName")
    pods: list[dict[str, Any]] = []
    task_min: dict[str, int] = {}
    for i, task in enumerate(tasks):
        where = f"spec.tasks[{i}]"
        if not isinstance(task, Mapping):
            raise InputError(where, "expected a map")
        task_name = typed(task.get("name") or f"default{i}", str, f"{where}.name")
        replicas = _count(task.get("replicas", 1), f"{where}.replicas", limits.max_replicas_per_task)
        if len(pods) + replicas > limits.max_replicas:
            raise InputError(f"{where}.replicas",
                             f"the job's tasks ask for more than {limits.max_replicas} pods in all")
        task_min[task_name] = _count(task.get("minAvailable", replicas), f"{where}.minAvailable")
        template = task.get("template")
        if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
            raise InputError(f"{where}.template.spec", "is required")
        meta = typed(template.get("metadata") or {}, Mapping, f"{where}.template.metadata")
        for key in ("annotations", "labels"):
            typed(meta.get(key) or {}, Mapping, f"{where}.template.metadata.{key}")
        for index in range(replicas):
            pods.append(_pod(job, namespace, name, queue, scheduler, priority_class, task_name, index, template, version))
    min_member = _count(spec.get("minAvailable", sum(task_min.values())), "spec.minAvailable")
    min_resources: dict[str, float] = {}
    for pod in pods[:min_member]:
        try:
            min_resources = add_lists(min_resources, pod_requests(pod["spec"]))
        except InputError as err:
            raise InputError(f"spec.tasks[{pod['metadata']['annotations'][TASK_SPEC]}].template.{err.where}", err.message) from None
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "annotations": _carried(job),
                     "ownerReferences": [_owner(job, name)]},
        "spec": {"minMember": min_member, "minTaskMember": task_min, "queue": queue,
                 "minResources": {n: format_value(n, v) for n, v in sorted(min_resources.items())},
                 **({"priorityClassName": priority_class} if priority_class else {})},
        "status": {"phase": "Pending"},
    }
    return podgroup, pods


def _pod(job: Mapping[str, Any], namespace: str, name: str, queue: str, scheduler: str, priority_class: Any,
         task_name: str, index: int, template: Mapping[str, Any], version: int) -> dict[str, Any]:
    meta = copy.deepcopy(dict(template.get("metadata") or {}))
    spec = copy.deepcopy(dict(template["spec"]))
    spec.setdefault("schedulerName", scheduler)
    if priority_class and not spec.get("priorityClassName"):
        spec["priorityClassName"] = priority_class
    annotations = {**(meta.get("annotations") or {}), **_carried(job),
                   TASK_SPEC: task_name, TASK_INDEX: str(index), GROUP_NAME: name, JOB_NAME: name,
                   QUEUE_NAME: queue, JOB_VERSION: str(version)}
    labels = {**(meta.get("labels") or {}), JOB_NAME: name, JOB_NAMESPACE: namespace, TASK_SPEC: task_name,
              QUEUE_NAME: queue}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**meta, "name": f"{name}-{task_name}-{index}", "namespace": namespace,
                     "annotations": annotations, "labels": labels, "ownerReferences": [_owner(job, name)]},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _carried(job: Mapping[str, Any]) -> dict[str, str]:
    """Job annotations Volcano passes on to its PodGroup and pods."""
    annotations = job["metadata"].get("annotations") or {}
    typed(annotations, Mapping, "metadata.annotations")
    passed = ("volcano.sh/preemptable", "volcano.sh/revocable-zone", "volcano.sh/jdb-min-available",
              "volcano.sh/jdb-max-unavailable", "volcano.sh/cooldown-time", "volcano.sh/numa-topology-policy",
              "volcano.sh/sla-waiting-time", "volcano.sh/task-topology-affinity",
              "volcano.sh/task-topology-anti-affinity", "volcano.sh/task-topology-task-order")
    return {k: str(v) for k, v in annotations.items() if k in passed}


def _owner(job: Mapping[str, Any], name: str) -> dict[str, Any]:
    uid = (job.get("metadata") or {}).get("uid", "")
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name, "uid": uid, "controller": True}


def _count(value: Any, where: str, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(where, f"expected a non-negative integer, got {value!r}")
    if maximum is not None and value > maximum:
        raise InputError(where, f"{value} exceeds the limit of {maximum}")
    return value
