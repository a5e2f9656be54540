"""Admission of PodGroups (scheduling.volcano.sh/v1beta1) and of pods' disruption-budget annotations.

mutate_podgroup(podgroup, cluster) -> dict       queue from the namespace annotation when unset/default
validate_podgroup(podgroup, cluster) -> list     queue exists and is Open, counts and quantities valid
validate_pod(pod, config) -> list                pods of this scheduler only: at most one JDB
                                                 annotation, a count > 0 or 1%..99%
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from central.admission import fields
from central.admission.cluster import DEFAULT_QUEUE, Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.fields import Problems, add, quote
from central.admission.jobs import exclusive_tiers

JDB_ANNOTATIONS = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
_PERCENT = re.compile(r"^(\d+)%$")


def mutate_podgroup(podgroup: Mapping[str, Any], cluster: Cluster) -> dict[str, Any]:
    out = copy.deepcopy(dict(podgroup))
    spec = out.setdefault("spec", {})
    if not isinstance(spec, dict):
        return out
    if (spec.get("queue") or DEFAULT_QUEUE) == DEFAULT_QUEUE:
        meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
        namespace = str(meta.get("namespace") or "default")
        spec["queue"] = cluster.namespace_queue(namespace) or DEFAULT_QUEUE
    return out


def validate_podgroup(podgroup: Mapping[str, Any], cluster: Cluster) -> Problems:
    problems: Problems = []
    meta = fields.mapping(problems, podgroup.get("metadata"), "metadata") or {}
    fields.dns_label(problems, meta.get("name"), "metadata.name", max_length=253)
    spec = fields.mapping(problems, podgroup.get("spec"), "spec")
    if spec is None:
        return problems
    fields.integer(problems, spec.get("minMember", 1), "spec.minMember")
    task_min = fields.mapping(problems, spec.get("minTaskMember"), "spec.minTaskMember") or {}
    for task, count in task_min.items():
        fields.integer(problems, count, f"spec.minTaskMember.{task}")
    fields.resources(problems, spec.get("minResources"), "spec.minResources")
    exclusive_tiers(problems, spec.get("networkTopology"), "spec.networkTopology")
    for i, policy in enumerate(fields.sequence(problems, spec.get("subGroupPolicy"), "spec.subGroupPolicy") or []):
        where = f"spec.subGroupPolicy[{i}]"
        policy = fields.mapping(problems, policy, where) or {}
        if not isinstance(policy.get("name"), str) or not policy.get("name"):
            add(problems, f"{where}.name", "is required")
        exclusive_tiers(problems, policy.get("networkTopology"), f"{where}.networkTopology")
    queue = spec.get("queue") or DEFAULT_QUEUE
    if not isinstance(queue, str):
        add(problems, "spec.queue", f"must be a queue name, got {quote(queue)}")
    elif queue not in cluster.queues:
        add(problems, "spec.queue", f"unable to find queue {quote(queue)}")
    elif cluster.state(queue) != "Open":
        add(
            problems,
            "spec.queue",
            f"can only submit PodGroup to queue with state Open; queue {quote(queue)} is {cluster.state(queue)}",
        )
    return problems


def validate_pod(pod: Mapping[str, Any], config: AdmissionConfig = DEFAULT_CONFIG) -> Problems:
    """Pods of other schedulers pass untouched, their JDB annotations included (as Volcano)."""
    problems: Problems = []
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    if (spec.get("schedulerName") or "default-scheduler") != config.scheduler_name:
        return problems
    meta = fields.mapping(problems, pod.get("metadata"), "metadata") or {}
    annotations = fields.mapping(problems, meta.get("annotations"), "metadata.annotations") or {}
    present = [key for key in JDB_ANNOTATIONS if key in annotations]
    if len(present) > 1:
        add(problems, "metadata.annotations", f"must not set both {present[0]} and {present[1]}")
    for key in present:
        value = str(annotations[key])
        percent = _PERCENT.match(value)
        if percent and not 1 <= int(percent[1]) <= 99:
            add(
                problems, f"metadata.annotations[{key}]", f"a percentage must be between 1% and 99%, got {quote(value)}"
            )
        elif not percent and not (value.isdigit() and int(value) > 0):
            add(
                problems,
                f"metadata.annotations[{key}]",
                f"must be an integer > 0 or a percentage 1%..99%, got {quote(value)}",
            )
    return problems
