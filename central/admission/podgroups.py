"""Admission of PodGroups (scheduling.volcano.sh/v1beta1): registered for CREATE, as Volcano
registers it (`caldera validate` and a webhook configured for UPDATE pass `old`).

mutate_podgroup(podgroup, cluster) -> dict       queue from the namespace annotation when unset/default
validate_podgroup(podgroup, cluster) -> list     queue exists, is Open and takes the namespace; counts,
                                                 quantities and interpreted annotations valid, and the
                                                 scheduler's parser reads it
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from central.admission import fields
from central.admission.cluster import DEFAULT_QUEUE, Cluster
from central.admission.fields import Problems, add, quote
from central.admission.jobs import exclusive_tiers, namespace_of
from central.model.annotations import ALLOWED_NAMESPACES
from central.model.fields import map_at
from central.model.parse import parse_podgroup


def mutate_podgroup(podgroup: Mapping[str, Any], cluster: Cluster) -> dict[str, Any]:
    out = copy.deepcopy(dict(podgroup))
    spec = out.setdefault("spec", {})
    if not isinstance(spec, dict):
        return out
    if (spec.get("queue") or DEFAULT_QUEUE) == DEFAULT_QUEUE:
        namespace = str(map_at(out, "metadata").get("namespace") or "default")
        spec["queue"] = cluster.namespace_queue(namespace) or DEFAULT_QUEUE
    return out


def validate_podgroup(podgroup: Mapping[str, Any], cluster: Cluster,
                      old: Mapping[str, Any] | None = None) -> Problems:
    """Every problem; on UPDATE (`old`) the queue is checked only if it changed, so a closed
    queue still lets its PodGroups be resized."""
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
    old_spec = old.get("spec") if isinstance(old, Mapping) else None
    if isinstance(old_spec, Mapping) and (old_spec.get("queue") or DEFAULT_QUEUE) == queue:
        pass
    elif not isinstance(queue, str):
        add(problems, "spec.queue", f"must be a queue name, got {quote(queue)}")
    elif queue not in cluster.queues:
        add(problems, "spec.queue", f"unable to find queue {quote(queue)}")
    elif cluster.state(queue) != "Open":
        add(
            problems,
            "spec.queue",
            f"can only submit PodGroup to queue with state Open; queue {quote(queue)} is {cluster.state(queue)}",
        )
    elif (refusing := cluster.refusing_queue(queue, namespace_of(podgroup))) is not None:
        add(problems, "spec.queue", f"queue {quote(refusing)} does not take PodGroups from namespace "
                                    f"{quote(namespace_of(podgroup))} (its annotation {ALLOWED_NAMESPACES})")
    fields.interpreted(problems, meta.get("annotations"), "PodGroup")
    if not problems:
        fields.readable(problems, parse_podgroup, podgroup)
    return problems

