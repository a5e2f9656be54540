"""Admission of the pods Caldera schedules or pins (CREATE and UPDATE), as Volcano's pods webhook.

validate_pod(pod, config, old=None, user=None) -> list
mutate_pod(pod, config, namespace) -> dict   the pod as Volcano's pods mutating webhook leaves it (a copy)

Checked for pods of Caldera's scheduler (spec.schedulerName == config.scheduler_name) and for
any pod that carries a scheduler-only annotation:
- the pod parses as the scheduler will read it (central.model.parse.parse_pod: quantities
  finite and within int64, selectors, affinity, tolerations...);
- every annotation a plugin or the agent interprets is valid (central.model.annotations);
- Volcano's disruption-budget rule: at most one of jdb-min-available / jdb-max-unavailable,
  an integer > 0 or 1%..99%;
- `caldera.sh/cpuset` and `caldera.sh/numa-nodes` pin a pod to CPUs, so only the scheduler
  may set or change them (request userInfo.username == config.scheduler_user). Without this,
  any pod owner could pin onto CPUs the scheduler gave exclusively to another pod. An UPDATE
  that leaves them as they were is anyone's (a label change by the owner).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.admission import fields
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.fields import Problems, add, quote
from central.admission.resourcegroups import place_in_group
from central.errors import InputError
from central.model import annotations as model_annotations
from central.model.fields import map_at
from central.model.parse import parse_pod
from central.model.schedulinggate import QUEUE_ALLOCATION_GATE, SCHEDULING_GATES_QUEUE_ADMISSION, gate_names, opted_in


def concerns(pod: Mapping[str, Any], config: AdmissionConfig, old: Mapping[str, Any] | None = None) -> bool:
    """Whether admission has rules for this pod (the webhook lets every other pod through)."""
    return map_at(pod, "spec").get("schedulerName") == config.scheduler_name or bool(_pinning(pod)) or bool(_pinning(old))


def validate_pod(pod: Mapping[str, Any], config: AdmissionConfig = DEFAULT_CONFIG,
                 old: Mapping[str, Any] | None = None, user: str | None = None) -> Problems:
    problems: Problems = []
    if not concerns(pod, config, old):
        return problems
    meta = fields.mapping(problems, pod.get("metadata"), "metadata") or {}
    raw = fields.mapping(problems, meta.get("annotations"), "metadata.annotations") or {}
    _pinning_is_the_schedulers(problems, pod, old, user, config)
    refused: set[str] = set()
    if map_at(pod, "spec").get("schedulerName") == config.scheduler_name:  # another scheduler's pod: its JDB is not ours (Volcano)
        refused = _disruption_budget(problems, raw)
    fields.interpreted(problems, {k: v for k, v in raw.items() if k not in refused}, "Pod")
    if not problems:  # the model's parser repeats the checks above in its own words
        fields.readable(problems, parse_pod, dict(pod, metadata={"name": "x", **meta}))
    return problems


def mutate_pod(pod: Mapping[str, Any], config: AdmissionConfig = DEFAULT_CONFIG, namespace: str = "") -> dict[str, Any]:
    """As Volcano's pods mutating webhook, for any scheduler's pod: with
    SchedulingGatesQueueAdmission on, a pod that opts in (annotation
    scheduling.volcano.sh/queue-allocation-gate: "true") gets that scheduling gate, after any
    it has, once (the scheduler removes it when the pod's queue admits the pod); and a pod of
    a resource group (`central.admission.resourcegroups`, --admission-conf) gets its placement."""
    groups = config.resource_groups.groups() if config.resource_groups is not None else ()
    out = place_in_group(pod, groups, namespace or str(map_at(pod, "metadata").get("namespace") or "")) if groups else dict(pod)
    if SCHEDULING_GATES_QUEUE_ADMISSION not in config.features or not opted_in(map_at(pod, "metadata").get("annotations")):
        return out
    spec = map_at(out, "spec")
    if QUEUE_ALLOCATION_GATE in gate_names(spec):
        return out
    gates = spec.get("schedulingGates")
    out["spec"] = {**spec, "schedulingGates": [*(gates if isinstance(gates, list) else []), {"name": QUEUE_ALLOCATION_GATE}]}
    return out


def _pinning(pod: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = pod.get("metadata") if isinstance(pod, Mapping) else None
    raw = meta.get("annotations") if isinstance(meta, Mapping) else None
    return {k: raw[k] for k in sorted(model_annotations.SCHEDULER_ONLY) if k in raw} if isinstance(raw, Mapping) else {}


def _pinning_is_the_schedulers(problems: Problems, pod: Mapping[str, Any], old: Mapping[str, Any] | None,
                               user: str | None, config: AdmissionConfig) -> None:
    new, before = _pinning(pod), _pinning(old)
    if new == before or user == config.scheduler_user:
        return
    for key in sorted(set(new) | set(before)):
        if new.get(key) != before.get(key):
            add(problems, f"metadata.annotations[{key}]",
                f"may be set only by the scheduler ({config.scheduler_user}), "
                f"not by {quote(user or 'an unknown user')}")


def _disruption_budget(problems: Problems, raw: Mapping[str, Any]) -> set[str]:
    """Volcano's pod webhook is stricter than its tdm plugin: no 0, no 0% or 100%. Returns the
    keys refused, each reported once, in Volcano's words."""
    refused: set[str] = set()
    for key in (model_annotations.JDB_MIN_AVAILABLE, model_annotations.JDB_MAX_UNAVAILABLE):
        if key not in raw:
            continue
        try:
            value, percent = model_annotations.count_or_percent(raw[key], key)
        except InputError:
            value, percent = 0, False
        if (percent and not 1 <= value <= 99) or (not percent and value < 1):
            refused.add(key)
            add(problems, f"metadata.annotations[{key}]",
                f"{key.rpartition('/')[2]} must be a positive integer or a valid percentage which between 1% ~ 99%, "
                f"got {quote(raw[key])}")
    return refused
