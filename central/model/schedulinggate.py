"""Queue admission by scheduling gate, Volcano's `SchedulingGatesQueueAdmission` feature.

A pod opts in with the annotation `scheduling.volcano.sh/queue-allocation-gate: "true"`. The
pods mutating webhook then gives it the scheduling gate of the same name, so the API server
keeps it `SchedulingGated` (no Unschedulable condition for an autoscaler to act on) while its
queue has no room. The scheduler removes the gate once the queue admits the pod
(Allocatable passes); the pod is placed in a later cycle. Both halves are off unless the
process is started with `--feature-gates=SchedulingGatesQueueAdmission=true`, as Volcano.

Feature gates are parsed as Kubernetes parses `--feature-gates`: `Name=bool,...`. Volcano's
other gate names are accepted (they change nothing here); any other name is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from central.errors import InputError

QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"  # the gate's name and the opt-in annotation
SCHEDULING_GATES_QUEUE_ADMISSION = "SchedulingGatesQueueAdmission"

# Volcano's feature gates and their defaults; only the queue-admission one has an effect here.
VOLCANO_FEATURE_GATES = {
    "WorkLoadSupport": True, "VolcanoJobSupport": True, "PodDisruptionBudgetsSupport": True,
    "QueueCommandSync": True, "PriorityClass": True, "CSIStorage": False, "ResourceTopology": True,
    "CronVolcanoJobSupport": True, SCHEDULING_GATES_QUEUE_ADMISSION: False,
}
_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_feature_gates(text: str, flag: str = "--feature-gates") -> frozenset[str]:
    """The names of the gates enabled by `text` ("A=true,B=false") over Volcano's defaults."""
    enabled = {name for name, on in VOLCANO_FEATURE_GATES.items() if on}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep:
            raise InputError(flag, f"missing bool value for {name}")
        if name not in VOLCANO_FEATURE_GATES:
            raise InputError(flag, f"unrecognized feature gate: {name} (known: {', '.join(sorted(VOLCANO_FEATURE_GATES))})")
        if value in _TRUE:
            enabled.add(name)
        elif value in _FALSE:
            enabled.discard(name)
        else:
            raise InputError(flag, f"invalid value of {name}={value}, expected a bool (true or false)")
    return frozenset(enabled)


def opted_in(annotations: Mapping[str, Any] | None) -> bool:
    """Does the pod ask for queue admission by gate (the annotation is exactly "true")?"""
    return isinstance(annotations, Mapping) and annotations.get(QUEUE_ALLOCATION_GATE) == "true"


def gate_names(spec: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The names in a pod spec's `schedulingGates`."""
    gates = spec.get("schedulingGates") if isinstance(spec, Mapping) else None
    if not isinstance(gates, list):
        return ()
    return tuple(str(g.get("name")) for g in gates if isinstance(g, Mapping) and g.get("name"))


def only_queue_gate(gates: Iterable[str]) -> bool:
    """Is the queue-allocation gate the pod's one and only gate (so it is ours to remove)?"""
    return tuple(gates) == (QUEUE_ALLOCATION_GATE,)


def without_queue_gate(gates: Iterable[str]) -> tuple[str, ...]:
    """The gates left once the scheduler removed the queue-allocation gate."""
    return tuple(g for g in gates if g != QUEUE_ALLOCATION_GATE)
