"""The extender plugin's JSON bodies, as Volcano's Go structs serialise them.

Volcano's request and response structs (pkg/scheduler/plugins/extender/argument.go) carry
its internal TaskInfo, NodeInfo, JobInfo and QueueInfo, which have no json tags: their
fields go out under Go's names (`UID`, `Resreq`, `MilliCPU`...). An extender written against
Volcano decodes these into the same structs, so a field left out here simply decodes to its
zero value. What is sent:

- TaskInfo: UID, Job, Name, Namespace, TaskRole, Resreq, InitResreq (both Caldera's
  effective request), NodeName, Status (Volcano's bit values: Pending 1, Allocated 2,
  Pipelined 4, Binding 8, Bound 16, Running 32, Releasing 64, Succeeded 128, Failed 256,
  Unknown 512), Priority, Preemptable, BestEffort, SchGated, RevocableZone, and Pod: the
  pod's metadata (name, namespace, labels, annotations, creationTimestamp) and the spec
  fields the scheduler reads (schedulerName, nodeName, priority, priorityClassName,
  nodeSelector, tolerations), with ONE container, named `caldera-effective-request`, whose
  requests are the pod's effective request (Caldera keeps no pod's own container list).
- Resource: MilliCPU, Memory (bytes), ScalarResources (milli-units, as Volcano), MaxTaskNum.
- NodeInfo: Name, Node (metadata, spec.unschedulable and taints, status.allocatable and
  capacity), State, Releasing, Pipelined, Idle, Used, Allocatable, Capacity, Tasks (by UID),
  RevocableZone.
- JobInfo: UID, Name, Namespace, Queue, Priority, MinAvailable, TaskMinAvailable,
  TaskMinAvailableTotal, Tasks (by UID), Allocated, TotalRequest, CreationTimestamp,
  Preemptable, and PodGroup (metadata, spec minMember/queue/priorityClassName, status phase).
- QueueInfo: UID, Name, Weight, Hierarchy, Weights, and Queue (metadata, spec weight,
  capability, deserved, guarantee, reclaimable, priority, parent; status state).
Left out (zero values): NUMA and GPU topology, image states, NodesFitErrors, TaskStatusIndex,
ResourceUsage, the session-open request's NamespaceInfo ({}), and the transaction fields.

Responses are decoded as Go's encoding/json does: keys match field names case-insensitively,
unknown keys are ignored, a value of the wrong type is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from central.model.objects import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from central.resources.vectors import CPU, MEMORY, PODS

REVOCABLE_ZONE = "volcano.sh/revocable-zone"
CONTAINER = "caldera-effective-request"


def resource(values: Mapping[str, float] | Sequence[tuple[str, float]], max_tasks: int = 0) -> dict[str, Any]:
    """Volcano's Resource from canonical values (cpu millicores, memory bytes, scalars milli)."""
    items = dict(values)
    scalars = {k: v for k, v in items.items() if k not in (CPU, MEMORY, PODS) and v}
    return {"MilliCPU": items.get(CPU, 0.0), "Memory": items.get(MEMORY, 0.0),
            "ScalarResources": scalars or None, "MaxTaskNum": max_tasks}


def vector_resource(vector: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    return resource({name: float(v) for name, v in zip(names, vector, strict=False)})


def task(t: TaskInfo) -> dict[str, Any]:
    request = resource(t.template.resreq)
    return {
        "UID": t.uid, "Job": t.job_uid, "Name": t.name, "Namespace": t.namespace, "TaskRole": t.role,
        "Resreq": request, "InitResreq": request, "NodeName": t.node or "",
        "Status": task_status_bits(t.status), "Priority": t.priority, "Preemptable": t.preemptable,
        "BestEffort": t.best_effort, "SchGated": t.gated,
        "RevocableZone": t.annotations.get(REVOCABLE_ZONE, ""), "Pod": _pod(t)}


def _pod(t: TaskInfo) -> dict[str, Any]:
    template = t.template
    spec: dict[str, Any] = {
        "schedulerName": t.scheduler_name,
        "containers": [{"name": CONTAINER, "resources": {"requests": _quantities(template.resreq)}}]}
    if t.node:
        spec["nodeName"] = t.node
    if t.spec_priority is not None:
        spec["priority"] = t.spec_priority
    if t.priority_class:
        spec["priorityClassName"] = t.priority_class
    if template.node_selector:
        spec["nodeSelector"] = dict(template.node_selector)
    if template.tolerations:
        spec["tolerations"] = [{k: v for k, v in (("key", tol.key), ("operator", tol.operator), ("value", tol.value),
                                                  ("effect", tol.effect)) if v is not None} for tol in template.tolerations]
    meta = {"name": t.name, "namespace": t.namespace, "labels": dict(template.labels), "annotations": dict(t.annotations),
            "creationTimestamp": t.creation or None}
    return {"metadata": meta, "spec": spec, "status": {}}


def _quantities(values: Sequence[tuple[str, float]]) -> dict[str, str]:
    """Canonical values back as Kubernetes quantities ("500m", "1073741824", "1")."""
    out = {}
    for name, value in values:
        if name == MEMORY:
            out[name] = str(int(value))
        else:
            out[name] = str(int(value // 1000)) if value % 1000 == 0 else f"{int(value)}m"
    return out


def node(n: NodeInfo, table: Any, names: Sequence[str]) -> dict[str, Any]:
    """`table`: the session's node table (used, idle, releasing, pipelined per row)."""
    row = n.index
    allocatable = resource(n.allocatable, n.max_pods)
    return {
        "Name": n.name,
        "Node": {"metadata": {"name": n.name, "labels": dict(n.labels), "annotations": dict(n.annotations)},
                 "spec": {"unschedulable": n.unschedulable,
                          "taints": [{"key": t.key, "value": t.value or "", "effect": t.effect} for t in n.taints]},
                 "status": {"allocatable": _quantities(list(n.allocatable.items())),
                            "capacity": _quantities(list((n.capacity or n.allocatable).items()))}},
        "State": {"Phase": "NotReady" if n.unschedulable else "Ready", "Reason": ""},
        "Releasing": vector_resource(table.releasing[row], names),
        "Pipelined": vector_resource(table.pipelined[row], names),
        "Idle": vector_resource(table.idle[row], names),
        "Used": vector_resource(table.used[row], names),
        "Allocatable": allocatable,
        "Capacity": resource(n.capacity, n.max_pods) if n.capacity else allocatable,
        "Tasks": {t.uid: task(t) for t in n.tasks.values()},
        "RevocableZone": n.labels.get(REVOCABLE_ZONE, ""),
    }


def job(j: JobInfo, names: Sequence[str]) -> dict[str, Any]:
    zeros = np.zeros(len(names))
    allocated = j.allocated if j.allocated is not None else zeros
    pending = j.pending_request if j.pending_request is not None else zeros
    podgroup = {"metadata": {"name": j.name, "namespace": j.namespace, "annotations": dict(j.annotations),
                             "creationTimestamp": j.creation or None},
                "spec": {"minMember": j.min_available, "queue": j.queue, "priorityClassName": j.priority_class},
                "status": {"phase": j.phase or "Pending"}}
    return {
        "UID": j.uid, "Name": j.name, "Namespace": j.namespace, "Queue": j.queue, "Priority": j.priority,
        "MinAvailable": j.min_available, "TaskMinAvailable": dict(j.task_min_available),
        "TaskMinAvailableTotal": sum(j.task_min_available.values()),
        "Tasks": {t.uid: task(t) for t in j.tasks.values()},
        "Allocated": vector_resource(allocated, names), "TotalRequest": vector_resource(allocated + pending, names),
        "CreationTimestamp": j.creation or None, "PodGroup": podgroup, "Preemptable": j.preemptable,
    }


def queue(q: QueueInfo) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": q.weight, "capability": _quantities(list(q.capability.items())),
                            "deserved": _quantities(list(q.deserved.items())),
                            "guarantee": {"resource": _quantities(list(q.guarantee.items()))},
                            "reclaimable": q.reclaimable, "priority": q.priority}
    if q.parent:
        spec["parent"] = q.parent
    return {"UID": q.name, "Name": q.name, "Weight": q.weight, "Weights": q.hierarchy_weights, "Hierarchy": q.hierarchy,
            "Queue": {"metadata": {"name": q.name, "annotations": dict(q.annotations)}, "spec": spec,
                      "status": {"state": q.state}}}


# --- responses --------------------------------------------------------------------------


class DecodeError(ValueError):
    pass


def field(body: Any, name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    """Go's decoding of one struct field: the key matched case-insensitively (an exact match
    first), absent or null -> `default`, a wrong type -> DecodeError."""
    if not isinstance(body, dict):
        raise DecodeError(f"cannot unmarshal {type(body).__name__} into a Go struct")
    value = body[name] if name in body else next((v for k, v in body.items() if k.lower() == name.lower()), None)
    if value is None:
        return default
    ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in _kinds(kind))
    if not ok:
        raise DecodeError(f"cannot unmarshal {type(value).__name__} into Go struct field {name}")
    return value


def integer(body: Any, name: str) -> int:
    value = field(body, name, (int, float), 0)
    if value != int(value):
        raise DecodeError(f"cannot unmarshal number {value} into Go struct field {name} of type int")
    return int(value)


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def task_status_bits(status: TaskStatus) -> int:
    return 1 << (int(status) - 1)
