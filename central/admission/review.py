"""One entry point for every admission request, as the webhook and `caldera validate` make them.

    admit(obj, cluster, config=DEFAULT_CONFIG, old=None) -> Review
        defaults the object as the mutating webhook would, then validates it; `old` makes it
        an update. Kinds without rules (Services, ConfigMaps, ...) are allowed unchanged.
    admit_delete(obj, cluster, config=DEFAULT_CONFIG) -> Review
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
from central.admission.hypernodes import validate_hypernode
from central.admission.jobs import mutate_job, validate_job
from central.admission.podgroups import mutate_podgroup, validate_podgroup
from central.admission.pods import mutate_pod, validate_pod
from central.admission.queues import mutate_queue, validate_queue, validate_queue_delete
from central.admission.workloads import validate_cronjob, validate_jobflow
from central.errors import InputError


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
    if kind == "CronJob" and group != "batch.volcano.sh" or kind == "JobFlow" and group != "flow.volcano.sh":
        return f"{group}/{kind}"
    if kind in ("Queue", "PodGroup") and group != "scheduling.volcano.sh":
        return f"{group}/{kind}"
    return kind


def admit(
    obj: Mapping[str, Any],
    cluster: Cluster,
    config: AdmissionConfig = DEFAULT_CONFIG,
    old: Mapping[str, Any] | None = None,
    user: str | None = None,
) -> Review:
    """The decision on `obj` (`old` makes it an update; `user` is the requester's username).
    A malformed object is a denial naming the field, never an exception."""
    try:
        return _admit(obj, cluster, config, old, user)
    except InputError as err:  # a validator met a shape it did not expect: still the user's error
        return Review(False, [f"{err.where}: {err.message}" if err.where else err.message], dict(obj))


def _admit(obj: Mapping[str, Any], cluster: Cluster, config: AdmissionConfig, old: Mapping[str, Any] | None,
           user: str | None) -> Review:
    kind = kind_of(obj)
    if kind == "Job":
        mutated = mutate_job(obj, config)
        errors = validate_job(mutated, cluster, config, None if old is None else mutate_job(old, config))
    elif kind == "Queue":
        mutated = mutate_queue(obj)
        errors = validate_queue(mutated, cluster, config, old)
    elif kind == "PodGroup":
        mutated = mutate_podgroup(obj, cluster)
        errors = validate_podgroup(mutated, cluster, old)
    elif kind == "Pod":
        mutated = mutate_pod(obj, config) if old is None else dict(obj)
        errors = validate_pod(obj, config, old, user)
    elif kind == "HyperNode":
        mutated, errors = dict(obj), validate_hypernode(obj)
    elif kind == "CronJob":
        mutated, errors = dict(obj), validate_cronjob(obj)
    elif kind == "JobFlow":
        mutated, errors = dict(obj), validate_jobflow(obj)
    else:
        mutated, errors = dict(obj), []
    return Review(not errors, errors, mutated)


def admit_delete(obj: Mapping[str, Any], cluster: Cluster, config: AdmissionConfig = DEFAULT_CONFIG) -> Review:
    errors: list[str] = []
    if kind_of(obj) == "Queue":
        errors = validate_queue_delete(str((obj.get("metadata") or {}).get("name") or ""), cluster, config)
    return Review(not errors, errors, dict(obj))


def json_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for key in after:
        if key not in before:
            ops.append({"op": "add", "path": f"/{key}", "value": after[key]})
        elif before[key] != after[key]:
            ops.append({"op": "replace", "path": f"/{key}", "value": after[key]})
    return ops
