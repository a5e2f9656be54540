"""One entry point for every admission request, as the webhook and `caldera validate` make them.

    admit(obj, cluster, config=DEFAULT_CONFIG, old=None) -> Review
        defaults the object as the mutating webhook would, then validates it; `old` makes it
        an update. Kinds without rules (Services, ConfigMaps, ...) are allowed unchanged.
    admit_delete(obj, cluster) -> Review
        the delete rules (only Queues have them).
    json_patch(before, after) -> list[dict]
        the mutating webhook's JSONPatch: one add/replace per top-level field that changed.

A Review never raises for a bad object: every problem is in `errors` as "<field.path>: <message>".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from central.admission.cluster import Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.jobs import mutate_job, validate_job
from central.admission.podgroups import mutate_podgroup, validate_pod, validate_podgroup
from central.admission.queues import mutate_queue, validate_queue, validate_queue_delete


@dataclass
class Review:
    allowed: bool
    errors: list[str] = field(default_factory=list)
    object: dict[str, Any] = field(default_factory=dict)  # after defaulting


def kind_of(obj: Mapping[str, Any]) -> str:
    """The kind as admission routes it; Volcano Jobs are told apart from batch/v1 Jobs."""
    kind = str(obj.get("kind") or "")
    group = str(obj.get("apiVersion") or "").partition("/")[0]
    if kind == "Job" and group != "batch.volcano.sh":
        return "batch/Job"
    if kind in ("Queue", "PodGroup") and group != "scheduling.volcano.sh":
        return f"{group}/{kind}"
    return kind


def admit(
    obj: Mapping[str, Any],
    cluster: Cluster,
    config: AdmissionConfig = DEFAULT_CONFIG,
    old: Mapping[str, Any] | None = None,
) -> Review:
    kind = kind_of(obj)
    if kind == "Job":
        mutated = mutate_job(obj, config)
        errors = validate_job(mutated, cluster, config, None if old is None else mutate_job(old, config))
    elif kind == "Queue":
        mutated = mutate_queue(obj)
        errors = validate_queue(mutated, cluster, config, old)
    elif kind == "PodGroup":
        mutated = mutate_podgroup(obj, cluster)
        errors = validate_podgroup(mutated, cluster)
    elif kind == "Pod":
        mutated, errors = dict(obj), validate_pod(obj, config)
    else:
        mutated, errors = dict(obj), []
    return Review(not errors, errors, mutated)


def admit_delete(obj: Mapping[str, Any], cluster: Cluster) -> Review:
    errors: list[str] = []
    if kind_of(obj) == "Queue":
        errors = validate_queue_delete(str((obj.get("metadata") or {}).get("name") or ""), cluster)
    return Review(not errors, errors, dict(obj))


def json_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for key in after:
        if key not in before:
            ops.append({"op": "add", "path": f"/{key}", "value": after[key]})
        elif before[key] != after[key]:
            ops.append({"op": "replace", "path": f"/{key}", "value": after[key]})
    return ops
