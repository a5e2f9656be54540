"""Kubernetes objects (dicts as the API returns them) into the scheduling model.

Every function raises InputError whose `where` is the object and field, e.g.
``Pod default/ps-0: spec.containers[0].resources.requests.cpu``. Defaults are the ones the
API server and Volcano's controllers would have applied (requests default to limits, a Queue
without status.state is Open, weight 1, reclaimable true).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.errors import InputError
from central.model.annotations import ALLOWED_NAMESPACES, namespaces
from central.model.drastore import pod_device_claims
from central.model.fields import get_path, integer, listed, metadata, str_map, typed
from central.model.hypernodes import parse_network_topology
from central.model.objects import (
    JobInfo,
    NodeGroupAffinity,
    NodeInfo,
    PodTemplate,
    QueueInfo,
    Taint,
    TaskInfo,
    task_status,
)
from central.model.pgstatus import semantic
from central.model.podspec import pod_template, template_view
from central.model.quota import is_quota_only, quantity_list
from central.model.schedulinggate import gate_names
from central.model.subgroups import parse_subgroup_policies
from central.model.volumes import pod_claims
from central.resources.vectors import parse_resource_list

GROUP_NAME = "scheduling.k8s.io/group-name"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
PREEMPTABLE = "volcano.sh/preemptable"
TASK_PRIORITY = "volcano.sh/task-priority"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
QUEUE_STATES = ("Open", "Closing", "Closed", "Unknown")


def taints(spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(listed(spec, "taints")):
        where = f"spec.taints[{i}]"
        t = typed(t, Mapping, where)
        effect = t.get("effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise InputError(f"{where}.effect", f"unknown effect {effect!r}; valid: NoSchedule, PreferNoSchedule, NoExecute")
        if not t.get("key"):
            raise InputError(f"{where}.key", "is required")
        out.append(Taint(str(t["key"]), t.get("value"), effect))
    return tuple(out)


def parse_pod(obj: Mapping[str, Any], templates: dict[str, PodTemplate] | None = None) -> tuple[TaskInfo, str | None]:
    """The task for a pod, and the PodGroup it names (None: it needs an implicit one).

    `templates` memoises parsed templates by the text of the spec's template view, so the
    pods of one Volcano task are parsed once (the cache passes its own).
    """
    namespace, name = metadata(obj, namespaced=True)
    meta = obj["metadata"]
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    annotations = str_map(obj, "metadata.annotations")
    labels = str_map(obj, "metadata.labels")
    view = template_view(spec)  # the template is made from the view alone, so it is all the memo's key needs
    if templates is None:
        template = pod_template(namespace, labels, view)
    else:
        key = repr((namespace, labels, view))
        known = templates.get(key)
        if known is None:
            known = templates[key] = pod_template(namespace, labels, view)
        template = known
    phase = typed(get_path(obj, "status.phase", "Pending"), str, "status.phase")
    node = typed(spec.get("nodeName") or "", str, "spec.nodeName") or None
    status = task_status(phase, node, bool(meta.get("deletionTimestamp")))
    spec_priority = spec.get("priority")
    if spec_priority is not None:
        spec_priority = integer(spec_priority, "spec.priority")
    if TASK_PRIORITY in annotations:
        spec_priority = _annotation_int(annotations, TASK_PRIORITY)
    policy = spec.get("preemptionPolicy", "PreemptLowerPriority")
    if policy not in ("PreemptLowerPriority", "Never"):
        raise InputError("spec.preemptionPolicy", f"unknown value {policy!r}; valid: PreemptLowerPriority, Never")
    preemptable = (annotations.get(PREEMPTABLE) or labels.get(PREEMPTABLE) or "true").lower() != "false"
    class_name = typed(spec.get("priorityClassName") or "", str, "spec.priorityClassName")
    task = TaskInfo(
        uid=f"{namespace}/{name}", name=name, namespace=namespace, job_uid="",
        role=annotations.get(TASK_SPEC) or labels.get(TASK_SPEC, ""),
        index=_annotation_int(annotations, TASK_INDEX) if TASK_INDEX in annotations else _name_index(name),
        template=template,
        priority=spec_priority or 0, preemptable=preemptable, preempt_never=policy == "Never",
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        creation=str(meta.get("creationTimestamp") or ""), status=status, node=node,
        nominated_node=typed(get_path(obj, "status.nominatedNodeName", ""), str, "status.nominatedNodeName") or None,
        critical=class_name in CRITICAL_CLASSES or namespace == "kube-system",
        annotations=annotations, spec_priority=spec_priority, priority_class=class_name,
        claims=pod_claims(name, spec),
        device_claims=pod_device_claims(obj),
        scheduled_at=_scheduled_at(obj),
        scheduling_gates=gate_names(spec),
    )
    return task, annotations.get(GROUP_NAME) or None


def _scheduled_at(obj: Mapping[str, Any]) -> str:
    """When the pod's PodScheduled condition turned True (the cdp plugin's cooldown start)."""
    for i, cond in enumerate(listed(obj, "status.conditions")):
        cond = typed(cond, Mapping, f"status.conditions[{i}]")
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return str(typed(cond.get("lastTransitionTime") or "", str, f"status.conditions[{i}].lastTransitionTime"))
    return ""


def _annotation_int(annotations: dict[str, str], key: str) -> int:
    try:
        return int(annotations[key])
    except ValueError:
        raise InputError(f"metadata.annotations[{key}]", f"expected an integer, got {annotations[key]!r}") from None


def _name_index(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def implicit_job(task: TaskInfo) -> JobInfo:
    """The PodGroup of one that Volcano's podgroup controller makes for a plain pod."""
    min_member = _annotation_int(task.annotations, GROUP_MIN_MEMBER) if GROUP_MIN_MEMBER in task.annotations else 1
    name = f"podgroup-{task.name}"
    return JobInfo(
        uid=f"{task.namespace}/{name}", name=name, namespace=task.namespace,
        queue=task.annotations.get(QUEUE_NAME, "default"), priority=0, min_available=min_member,
        task_min_available={}, min_resources={k: v * min_member for k, v in task.template.resreq},
        phase="Pending", creation=task.creation, implicit=True, priority_class=task.priority_class,
    )


# --- nodes, podgroups, queues, priority classes ---------------------------------------------


def parse_node(obj: Mapping[str, Any]) -> NodeInfo:
    _, name = metadata(obj, namespaced=False)
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    status = typed(obj.get("status") or {}, Mapping, "status")
    raw_alloc = status.get("allocatable") or status.get("capacity") or {}
    allocatable = parse_resource_list(raw_alloc, "status.allocatable")
    max_pods = int(allocatable.pop("pods", 110))
    annotations = str_map(obj, "metadata.annotations")
    capacity = parse_resource_list(status.get("capacity"), "status.capacity") if "allocatable" in status else allocatable
    return NodeInfo(name=name, index=-1, labels=str_map(obj, "metadata.labels"), taints=taints(spec),
                    unschedulable=bool(spec.get("unschedulable")), allocatable=allocatable, max_pods=max_pods,
                    annotations=annotations, capacity=capacity)


def parse_podgroup(obj: Mapping[str, Any]) -> JobInfo:
    namespace, name = metadata(obj, namespaced=True)
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    min_member = integer(spec.get("minMember", 1), "spec.minMember", 0)
    task_min = {str(k): integer(v, f"spec.minTaskMember.{k}", 0)
                for k, v in typed(spec.get("minTaskMember") or {}, Mapping, "spec.minTaskMember").items()}
    min_res = spec.get("minResources")
    annotations = str_map(obj, "metadata.annotations")
    phase = get_path(obj, "status.phase", "Pending")
    if phase not in ("Pending", "Inqueue", "Running", "Unknown", "Completed"):
        raise InputError("status.phase", f"unknown phase {phase!r}; valid: Pending, Inqueue, Running, Unknown, Completed")
    return JobInfo(
        uid=f"{namespace}/{name}", name=name, namespace=namespace,
        queue=typed(spec.get("queue") or "default", str, "spec.queue"),
        priority=0, min_available=min_member, task_min_available=task_min,
        min_resources=None if min_res is None else {  # a Job's PodGroup also carries quota keys (requests.cpu...)
            k: v for k, v in parse_resource_list(min_res, "spec.minResources").items() if not is_quota_only(k)},
        phase=phase, creation=str(get_path(obj, "metadata.creationTimestamp", "")),
        preemptable=(annotations.get(PREEMPTABLE) or "false").lower() == "true",
        priority_class=typed(spec.get("priorityClassName") or "", str, "spec.priorityClassName"),
        annotations=annotations, conditions=listed(obj, "status.conditions"),
        reported=semantic(obj.get("status") if isinstance(obj.get("status"), Mapping) else None),
        network_topology=parse_network_topology(spec.get("networkTopology"), "spec.networkTopology"),
        sub_group_policies=parse_subgroup_policies(spec.get("subGroupPolicy"), "spec.subGroupPolicy"),
        quota_request=None if min_res is None else quantity_list(min_res, "spec.minResources"),
    )


def parse_queue(obj: Mapping[str, Any]) -> QueueInfo:
    _, name = metadata(obj, namespaced=False)
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    weight = integer(spec.get("weight", 1), "spec.weight")
    if weight < 0:
        raise InputError("spec.weight", f"must not be negative, got {weight}")
    state = get_path(obj, "status.state", "Open")
    if state not in QUEUE_STATES:
        raise InputError("status.state", f"unknown state {state!r}; valid: {', '.join(QUEUE_STATES)}")
    guarantee = typed(spec.get("guarantee") or {}, Mapping, "spec.guarantee")
    reclaimable = spec.get("reclaimable", True)
    typed(reclaimable, bool, "spec.reclaimable")
    queue_annotations = str_map(obj, "metadata.annotations")
    tenants = None
    if ALLOWED_NAMESPACES in queue_annotations:
        tenants = namespaces(queue_annotations[ALLOWED_NAMESPACES])
    return QueueInfo(
        name=name, weight=weight,
        capability=parse_resource_list(spec.get("capability"), "spec.capability"),
        deserved=parse_resource_list(spec.get("deserved"), "spec.deserved"),
        guarantee=parse_resource_list(guarantee.get("resource"), "spec.guarantee.resource"),
        reclaimable=reclaimable, priority=integer(spec.get("priority", 0), "spec.priority"),
        parent=typed(spec.get("parent") or "", str, "spec.parent") or None, state=state,
        creation=str(get_path(obj, "metadata.creationTimestamp", "")), tenants=tenants,
        annotations=dict(queue_annotations),
        hierarchy=str(typed(get_path(obj, "metadata.annotations", {}), Mapping, "metadata.annotations")
                      .get("volcano.sh/hierarchy", "")),
        hierarchy_weights=str(get_path(obj, "metadata.annotations", {}).get("volcano.sh/hierarchy-weights", "")),
        node_groups=_node_groups(spec.get("affinity")),
    )


def _node_groups(raw: Any) -> NodeGroupAffinity | None:
    """A Queue's spec.affinity (nodeGroupAffinity, nodeGroupAntiAffinity), each with
    required/preferredDuringSchedulingIgnoredDuringExecution lists of node group names."""
    if raw is None:
        return None
    raw = typed(raw, Mapping, "spec.affinity")
    lists: dict[str, tuple[str, ...]] = {}
    for part, prefix in (("nodeGroupAffinity", ""), ("nodeGroupAntiAffinity", "anti_")):
        terms = typed(raw.get(part) or {}, Mapping, f"spec.affinity.{part}")
        for kind in ("required", "preferred"):
            key = f"{kind}DuringSchedulingIgnoredDuringExecution"
            where = f"spec.affinity.{part}.{key}"
            lists[prefix + kind] = tuple(typed(g, str, f"{where}[{i}]")
                                         for i, g in enumerate(typed(terms.get(key) or [], list, where)))
    return NodeGroupAffinity(**lists)


def parse_priority_class(obj: Mapping[str, Any]) -> tuple[str, int, bool]:
    _, name = metadata(obj, namespaced=False)
    value = integer(obj.get("value", 0), "value")
    return name, value, bool(obj.get("globalDefault", False))
