"""A Volcano Job (batch.volcano.sh/v1alpha1) expanded into its PodGroup and pods.

This is what Volcano's job controller creates for a job, as pure functions of the parsed
spec (central/model/jobspec.py) so that the controller and `caldera simulate` share them:
- one PodGroup named `<job>-<job uid>` as Volcano names it (`<job>` for a job without a uid,
  as in manifests read by `caldera simulate`), carrying the job's annotations and labels:
  minMember = spec.minAvailable, or the sum of replicas; minTaskMember = each task's
  minAvailable (default: its replicas); minResources = Volcano's calcPGMinResources, in the
  keys of a ResourceQuota's pod usage (`quota_usage`); queue, priorityClassName and
  networkTopology carried;
- pods `<job>-<task>-<index>` from each task's template, with Volcano's annotations and
  labels, the job's schedulerName (default `volcano`) and priorityClassName where the
  template names none.

    expand_job(job, version, limits) -> (PodGroup, pods)    every pod, for a job read once
    podgroup_name(spec) -> str                              the name of the PodGroup a job creates
    build_podgroup(spec) -> dict                            O(tasks), whatever the replicas
    build_pods(spec, version, names=None, group=None)       only the named pods when given; `group`:
                                                            the PodGroup they join (an adopted one)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from decimal import Decimal
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
from central.model.quota import format_quantity, quota_usage
from central.model.runtime_estimate import ANNOTATION as RUNNING_ESTIMATE
from central.model.subgroups import PARTITION_ID

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


def podgroup_name(spec: JobSpec) -> str:
    """Volcano's generateRelatedPodGroupName: `<job>-<job uid>`, so a job deleted and created
    again under its name never meets its predecessor's PodGroup."""
    return f"{spec.name}-{spec.uid}" if spec.uid else spec.name


def build_podgroup(spec: JobSpec) -> dict[str, Any]:
    # spec.runningEstimate reaches the scheduler as an annotation (PodGroups have no such field)
    estimate = {RUNNING_ESTIMATE: spec.running_estimate} if spec.running_estimate else {}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": podgroup_name(spec), "namespace": spec.namespace,
                     "annotations": {**spec.annotations, **spec.carried, **estimate}, "labels": dict(spec.labels),
                     "ownerReferences": [_owner(spec)]},
        "spec": {"minMember": spec.min_available, "minTaskMember": {t.name: t.min_available for t in spec.tasks},
                 "queue": spec.queue, "minResources": min_resources(spec),
                 **({"priorityClassName": spec.priority_class} if spec.priority_class else {}),
                 **({"networkTopology": podgroup_topology(spec.network_topology)}
                    if spec.network_topology is not None else {}),
                 **({"subGroupPolicy": policies} if (policies := subgroup_policies(spec)) else {})},
        "status": {"phase": "Pending"},
    }


def subgroup_policies(spec: JobSpec) -> list[dict[str, Any]]:
    """A sub-group per task with a partitionPolicy, as Volcano's job controller writes them:
    one partition of `partitionSize` pods each, told apart by the pods' partition-id label."""
    out = []
    for task in spec.tasks:
        if task.partition is None:
            continue
        policy: dict[str, Any] = {"name": task.name, "subGroupSize": task.partition.get("partitionSize"),
                                  "minSubGroups": task.partition.get("minPartitions") or 0,
                                  "labelSelector": {"matchLabels": {TASK_SPEC: task.name}},
                                  "matchLabelKeys": [PARTITION_ID]}
        if task.partition.get("networkTopology") is not None:
            policy["networkTopology"] = podgroup_topology(task.partition["networkTopology"])
        out.append(policy)
    return out


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
    """Volcano's calcPGMinResources (tasks in spec order: Volcano sorts them by priority class,
    which keeps that order when none is set): when minAvailable is below the tasks' summed
    minAvailable, the first minAvailable pods; else each task's minAvailable pods, filled up to
    minAvailable with the tasks' other replicas in order. Each pod counts its ResourceQuota usage."""
    counts = _min_pods(spec)
    total: dict[str, Decimal] = {}
    for task, count in counts:
        try:
            usage = quota_usage(task.template["spec"])
        except InputError as err:
            raise InputError(f"spec.tasks[{task.name}].template.{err.where}", err.message) from None
        for name, amount in usage.items():
            total[name] = total.get(name, Decimal(0)) + amount * count
    return {name: format_quantity(name, amount) for name, amount in sorted(total.items())}


def _min_pods(spec: JobSpec) -> list[tuple[TaskSpec, int]]:
    wanted = spec.min_available
    if wanted < sum(t.min_available for t in spec.tasks):  # CalcFirstCountResources
        out = []
        for task in spec.tasks:
            if wanted <= 0:
                break
            out.append((task, min(task.replicas, wanted)))
            wanted -= task.replicas
        return out
    out, have = [], 0
    for task in spec.tasks:  # 1. each task's minAvailable
        count = min(task.min_available, wanted - have)
        out.append((task, count))
        have += count
        if have >= wanted:
            return out
    left = wanted - have
    for task in spec.tasks:  # 2. the other replicas, in order
        spare = task.replicas - task.min_available
        if spare <= 0:
            continue
        out.append((task, min(spare, left)))
        left -= min(spare, left)
        if left <= 0:
            break
    return out


def build_pods(spec: JobSpec, version: int = 0, names: Collection[str] | None = None,
               group: str | None = None) -> list[dict[str, Any]]:
    """The job's pods in task order; only those named in `names` when given; members of the
    PodGroup `group` (default: the one the job creates)."""
    group = group or podgroup_name(spec)
    return [_pod(spec, task, index, version, group)
            for task in spec.tasks for index in range(task.replicas)
            if names is None or pod_name(spec, task, index) in names]


def _pod(spec: JobSpec, task: TaskSpec, index: int, version: int, group: str) -> dict[str, Any]:
    template = task.template
    meta = clone(template.get("metadata") or {})
    pod_spec = clone(template["spec"])
    pod_spec.setdefault("schedulerName", spec.scheduler_name)
    if spec.priority_class and not pod_spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec.priority_class
    annotations = {**(meta.get("annotations") or {}), **spec.carried,
                   TASK_SPEC: task.name, TASK_INDEX: str(index), GROUP_NAME: group, JOB_NAME: spec.name,
                   QUEUE_NAME: spec.queue, JOB_VERSION: str(version)}
    labels = {**(meta.get("labels") or {}), JOB_NAME: spec.name, JOB_NAMESPACE: spec.namespace,
              TASK_SPEC: task.name, QUEUE_NAME: spec.queue}
    size = task.partition.get("partitionSize") if task.partition is not None else None
    if task.partition is not None:  # Volcano: partition 0 where the size is unusable
        labels[PARTITION_ID] = str(index // size if isinstance(size, int) and size > 0 else 0)
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
