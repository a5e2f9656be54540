"""Kubernetes objects (dicts as the API returns them) into the scheduling model.

Every function raises InputError whose `where` is the object and field, e.g.
``Pod default/ps-0: spec.containers[0].resources.requests.cpu``. Defaults are the ones the
API server and Volcano's controllers would have applied (requests default to limits, a Queue
without status.state is Open, weight 1, reclaimable true).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from central.api.resources import add_lists, max_lists, parse_resource_list
from central.errors import InputError
from central.model.objects import (
    JobInfo,
    LabelRequirement,
    NodeInfo,
    PodAffinityTerm,
    PodTemplate,
    QueueInfo,
    Selector,
    SpreadConstraint,
    Taint,
    TaskInfo,
    Toleration,
    task_status,
)

GROUP_NAME = "scheduling.k8s.io/group-name"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
PREEMPTABLE = "volcano.sh/preemptable"
TASK_PRIORITY = "volcano.sh/task-priority"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
QUEUE_STATES = ("Open", "Closing", "Closed", "Unknown")


CLUSTER_SCOPED = frozenset({"Node", "Queue", "PriorityClass", "Namespace"})


def object_ref(obj: Mapping[str, Any]) -> str:
    """`Kind namespace/name` (or `Kind name` for cluster-scoped kinds) for messages."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    kind = obj.get("kind", "<no kind>")
    name = meta.get("name", "<unnamed>")
    if kind in CLUSTER_SCOPED:
        return f"{kind} {name}"
    return f"{kind} {meta.get('namespace') or 'default'}/{name}"


def parse_time(text: str, where: str) -> datetime:
    """An RFC 3339 time such as a creationTimestamp (`2026-01-01T00:00:00Z`)."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InputError(where, f"expected an RFC 3339 time like 2026-01-01T00:00:00Z, got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def parse_duration(text: str, where: str) -> timedelta:
    """A Go duration such as `1h30m`, `90s` or `500ms`."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text).strip():
        raise InputError(where, f"expected a duration like 30m, 1h or 1h30m, got {text!r}")
    return timedelta(seconds=sum(float(n) * units[u] for n, u in parts))


def yaml_problem(err: Exception) -> str:
    """A YAML error on one line: where and what."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else f"malformed YAML: {problem}"


def _map(obj: Mapping[str, Any], path: str, default: Any = None) -> Any:
    value: Any = obj
    for part in path.split("."):
        if value is None:
            return default
        if not isinstance(value, Mapping):
            raise InputError(path, f"expected a map, got {type(value).__name__}")
        value = value.get(part)
    return default if value is None else value


def _typed(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if isinstance(value, bool) and kind is int or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(where, f"expected {expected}, got {value!r}")
    return value


def _int(value: Any, where: str, minimum: int | None = None) -> int:
    _typed(value, int, where)
    if minimum is not None and value < minimum:
        raise InputError(where, f"must be >= {minimum}, got {value}")
    return int(value)


def _list(obj: Mapping[str, Any], path: str) -> list[Any]:
    value = _map(obj, path, [])
    return _typed(value, list, path)


def _str_map(obj: Mapping[str, Any], path: str) -> dict[str, str]:
    value = _typed(_map(obj, path, {}), Mapping, path)
    return {str(k): str(v) for k, v in value.items()}


def metadata(obj: Mapping[str, Any], namespaced: bool) -> tuple[str, str]:
    meta = _typed(obj.get("metadata") or {}, Mapping, "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("metadata.name", "is required")
    namespace = meta.get("namespace") or ("default" if namespaced else "")
    return str(namespace), name


# --- selectors, affinity, tolerations -------------------------------------------------------


def selector(raw: Any, where: str) -> Selector:
    raw = _typed(raw or {}, Mapping, where)
    reqs = [LabelRequirement(str(k), "In", (str(v),)) for k, v in (raw.get("matchLabels") or {}).items()]
    for i, expr in enumerate(raw.get("matchExpressions") or []):
        reqs.append(_requirement(expr, f"{where}.matchExpressions[{i}]"))
    return Selector(tuple(reqs))


def _requirement(expr: Any, where: str) -> LabelRequirement:
    expr = _typed(expr, Mapping, where)
    op = expr.get("operator")
    if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
        raise InputError(f"{where}.operator", f"unknown operator {op!r}; valid: In, NotIn, Exists, DoesNotExist, Gt, Lt")
    values = tuple(str(v) for v in _typed(expr.get("values") or [], list, f"{where}.values"))
    if op in ("In", "NotIn") and not values or op in ("Gt", "Lt") and len(values) != 1:
        raise InputError(f"{where}.values", f"operator {op} needs {'one value' if op in ('Gt', 'Lt') else 'values'}")
    key = expr.get("key")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.key", "is required")
    return LabelRequirement(key, op, values)


def _node_term(raw: Any, where: str) -> Selector:
    raw = _typed(raw or {}, Mapping, where)
    reqs = [_requirement(e, f"{where}.matchExpressions[{i}]") for i, e in enumerate(raw.get("matchExpressions") or [])]
    for i, f in enumerate(raw.get("matchFields") or []):
        req = _requirement(f, f"{where}.matchFields[{i}]")
        if req.key != "metadata.name":
            raise InputError(f"{where}.matchFields[{i}].key", "only metadata.name is supported")
        reqs.append(req)
    return Selector(tuple(reqs))


def _pod_terms(raw: Any, where: str, weighted: bool) -> tuple[PodAffinityTerm, ...]:
    terms = []
    for i, item in enumerate(_typed(raw or [], list, where)):
        item_where = f"{where}[{i}]"
        weight = 0
        if weighted:
            weight = _int(_typed(item, Mapping, item_where).get("weight", 1), f"{item_where}.weight", 1)
            item_where += ".podAffinityTerm"
            item = item.get("podAffinityTerm") or {}
        item = _typed(item, Mapping, item_where)
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise InputError(f"{item_where}.topologyKey", "is required")
        namespaces = tuple(str(n) for n in item.get("namespaces") or [])
        terms.append(PodAffinityTerm(selector(item.get("labelSelector"), f"{item_where}.labelSelector"), key, namespaces, weight))
    return tuple(terms)


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(_list(spec, "tolerations")):
        where = f"spec.tolerations[{i}]"
        t = _typed(t, Mapping, where)
        op = t.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise InputError(f"{where}.operator", f"unknown operator {op!r}; valid: Equal, Exists")
        out.append(Toleration(t.get("key") or None, op, t.get("value"), t.get("effect") or None))
    return tuple(out)


def taints(spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(_list(spec, "taints")):
        where = f"spec.taints[{i}]"
        t = _typed(t, Mapping, where)
        effect = t.get("effect")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise InputError(f"{where}.effect", f"unknown effect {effect!r}; valid: NoSchedule, PreferNoSchedule, NoExecute")
        if not t.get("key"):
            raise InputError(f"{where}.key", "is required")
        out.append(Taint(str(t["key"]), t.get("value"), effect))
    return tuple(out)


# --- pods -----------------------------------------------------------------------------------


def _container_requests(c: Mapping[str, Any], where: str) -> dict[str, float]:
    resources = _typed(c.get("resources") or {}, Mapping, f"{where}.resources")
    requests = parse_resource_list(resources.get("requests"), f"{where}.resources.requests")
    limits = parse_resource_list(resources.get("limits"), f"{where}.resources.limits")
    # The API server defaults a missing request to the limit.
    return {**limits, **requests}


def pod_requests(spec: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(resreq, init_resreq) as Volcano computes them; init_resreq is kube-scheduler's request."""
    reqs: dict[str, float] = {}
    for i, c in enumerate(_list(spec, "containers")):
        reqs = add_lists(reqs, _container_requests(_typed(c, Mapping, f"spec.containers[{i}]"), f"spec.containers[{i}]"))
    sidecars: dict[str, float] = {}
    init_max: dict[str, float] = {}
    for i, c in enumerate(_list(spec, "initContainers")):
        where = f"spec.initContainers[{i}]"
        c_reqs = _container_requests(_typed(c, Mapping, where), where)
        if c.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            reqs = add_lists(reqs, c_reqs)
            sidecars = add_lists(sidecars, c_reqs)
            init_max = max_lists(init_max, sidecars)
        else:
            init_max = max_lists(init_max, add_lists(c_reqs, sidecars))
    overhead = parse_resource_list(spec.get("overhead"), "spec.overhead")
    resreq = add_lists(reqs, overhead)
    init = add_lists(max_lists(reqs, init_max), overhead)
    resreq.pop("pods", None)
    init.pop("pods", None)
    return resreq, init


def _host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int, str], ...]:
    ports = []
    for i, c in enumerate(_list(spec, "containers")):
        for j, p in enumerate(_typed(c.get("ports") or [], list, f"spec.containers[{i}].ports")):
            if isinstance(p, Mapping) and p.get("hostPort"):
                port = _int(p["hostPort"], f"spec.containers[{i}].ports[{j}].hostPort", 1)
                ports.append((p.get("protocol", "TCP"), port, p.get("hostIP") or "0.0.0.0"))
    return tuple(sorted(ports))


def _spread(spec: Mapping[str, Any]) -> tuple[SpreadConstraint, ...]:
    out = []
    for i, c in enumerate(_list(spec, "topologySpreadConstraints")):
        where = f"spec.topologySpreadConstraints[{i}]"
        c = _typed(c, Mapping, where)
        when = c.get("whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise InputError(f"{where}.whenUnsatisfiable", f"unknown value {when!r}; valid: DoNotSchedule, ScheduleAnyway")
        key = c.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise InputError(f"{where}.topologyKey", "is required")
        out.append(SpreadConstraint(_int(c.get("maxSkew", 1), f"{where}.maxSkew", 1), key, when,
                                    selector(c.get("labelSelector"), f"{where}.labelSelector")))
    return tuple(out)


def _guaranteed(spec: Mapping[str, Any]) -> bool:
    """Kubernetes' Guaranteed QoS class: cpu and memory limits set, and requests equal to them."""
    containers = [*_list(spec, "containers"), *_list(spec, "initContainers")]
    for c in containers:
        resources = (c or {}).get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name, limits[name])) != str(limits[name]):
                return False
    return bool(containers)


def pod_template(namespace: str, labels: dict[str, str], spec: Mapping[str, Any]) -> PodTemplate:
    resreq, init = pod_requests(spec)
    affinity = _typed(spec.get("affinity") or {}, Mapping, "spec.affinity")
    node_aff = _typed(affinity.get("nodeAffinity") or {}, Mapping, "spec.affinity.nodeAffinity")
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    req_where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required_terms = tuple(_node_term(t, f"{req_where}.nodeSelectorTerms[{i}]")
                           for i, t in enumerate(_typed(required, Mapping, req_where).get("nodeSelectorTerms") or []))
    pref_where = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = tuple(
        (_int(_typed(p, Mapping, f"{pref_where}[{i}]").get("weight", 1), f"{pref_where}[{i}].weight", 1),
         _node_term(p.get("preference"), f"{pref_where}[{i}].preference"))
        for i, p in enumerate(_typed(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or [], list, pref_where)))
    pa = _typed(affinity.get("podAffinity") or {}, Mapping, "spec.affinity.podAffinity")
    paa = _typed(affinity.get("podAntiAffinity") or {}, Mapping, "spec.affinity.podAntiAffinity")
    req_key, pref_key = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    return PodTemplate(
        namespace=namespace,
        resreq=tuple(sorted(resreq.items())),
        init_resreq=tuple(sorted(init.items())),
        labels=tuple(sorted(labels.items())),
        node_selector=tuple(sorted(_str_map(spec, "nodeSelector").items())),
        required_node_terms=required_terms,
        preferred_node_terms=preferred,
        tolerations=_tolerations(spec),
        host_ports=_host_ports(spec),
        pod_affinity=_pod_terms(pa.get(req_key), f"spec.affinity.podAffinity.{req_key}", False),
        pod_anti_affinity=_pod_terms(paa.get(req_key), f"spec.affinity.podAntiAffinity.{req_key}", False),
        preferred_pod_affinity=_pod_terms(pa.get(pref_key), f"spec.affinity.podAffinity.{pref_key}", True),
        preferred_pod_anti_affinity=_pod_terms(paa.get(pref_key), f"spec.affinity.podAntiAffinity.{pref_key}", True),
        spread=_spread(spec),
        guaranteed=_guaranteed(spec),
    )


# Fields that differ between the pods of one template without changing where they may go.
_PER_POD_FIELDS = frozenset({"nodeName", "hostname", "subdomain", "priority"})


def parse_pod(obj: Mapping[str, Any], templates: dict[str, PodTemplate] | None = None) -> tuple[TaskInfo, str | None]:
    """The task for a pod, and the PodGroup it names (None: it needs an implicit one).

    `templates` memoises parsed templates by the pod's placement-relevant text, so the pods
    of one Volcano task are parsed once (the cache passes its own).
    """
    namespace, name = metadata(obj, namespaced=True)
    meta = obj["metadata"]
    spec = _typed(obj.get("spec") or {}, Mapping, "spec")
    annotations = _str_map(obj, "metadata.annotations")
    labels = _str_map(obj, "metadata.labels")
    if templates is None:
        template = pod_template(namespace, labels, spec)
    else:
        key = repr((namespace, labels, [(k, v) for k, v in spec.items() if k not in _PER_POD_FIELDS]))
        template = templates.get(key)
        if template is None:
            template = templates[key] = pod_template(namespace, labels, spec)
    phase = _map(obj, "status.phase", "Pending")
    node = spec.get("nodeName") or None
    status = task_status(phase, node, bool(meta.get("deletionTimestamp")))
    spec_priority = spec.get("priority")
    if spec_priority is not None:
        spec_priority = _int(spec_priority, "spec.priority")
    if TASK_PRIORITY in annotations:
        spec_priority = _annotation_int(annotations, TASK_PRIORITY)
    policy = spec.get("preemptionPolicy", "PreemptLowerPriority")
    if policy not in ("PreemptLowerPriority", "Never"):
        raise InputError("spec.preemptionPolicy", f"unknown value {policy!r}; valid: PreemptLowerPriority, Never")
    preemptable = (annotations.get(PREEMPTABLE) or labels.get(PREEMPTABLE) or "true").lower() != "false"
    class_name = str(spec.get("priorityClassName") or "")
    task = TaskInfo(
        uid=f"{namespace}/{name}", name=name, namespace=namespace, job_uid="",
        role=annotations.get(TASK_SPEC, ""),
        index=_annotation_int(annotations, TASK_INDEX) if TASK_INDEX in annotations else _name_index(name),
        template=template,
        priority=spec_priority or 0, preemptable=preemptable, preempt_never=policy == "Never",
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        creation=str(meta.get("creationTimestamp") or ""), status=status, node=node,
        nominated_node=_map(obj, "status.nominatedNodeName") or None,
        critical=class_name in CRITICAL_CLASSES or namespace == "kube-system",
        annotations=annotations, spec_priority=spec_priority, priority_class=class_name,
    )
    return task, annotations.get(GROUP_NAME) or None


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
    spec = _typed(obj.get("spec") or {}, Mapping, "spec")
    status = _typed(obj.get("status") or {}, Mapping, "status")
    raw_alloc = status.get("allocatable") or status.get("capacity") or {}
    allocatable = parse_resource_list(raw_alloc, "status.allocatable")
    max_pods = int(allocatable.pop("pods", 110))
    return NodeInfo(name=name, index=-1, labels=_str_map(obj, "metadata.labels"), taints=taints(spec),
                    unschedulable=bool(spec.get("unschedulable")), allocatable=allocatable, max_pods=max_pods,
                    annotations=_str_map(obj, "metadata.annotations"))


def parse_podgroup(obj: Mapping[str, Any]) -> JobInfo:
    namespace, name = metadata(obj, namespaced=True)
    spec = _typed(obj.get("spec") or {}, Mapping, "spec")
    min_member = _int(spec.get("minMember", 1), "spec.minMember", 0)
    task_min = {str(k): _int(v, f"spec.minTaskMember.{k}", 0)
                for k, v in _typed(spec.get("minTaskMember") or {}, Mapping, "spec.minTaskMember").items()}
    min_res = spec.get("minResources")
    annotations = _str_map(obj, "metadata.annotations")
    phase = _map(obj, "status.phase", "Pending")
    if phase not in ("Pending", "Inqueue", "Running", "Unknown", "Completed"):
        raise InputError("status.phase", f"unknown phase {phase!r}; valid: Pending, Inqueue, Running, Unknown, Completed")
    return JobInfo(
        uid=f"{namespace}/{name}", name=name, namespace=namespace, queue=str(spec.get("queue") or "default"),
        priority=0, min_available=min_member, task_min_available=task_min,
        min_resources=None if min_res is None else parse_resource_list(min_res, "spec.minResources"),
        phase=phase, creation=str(_map(obj, "metadata.creationTimestamp", "")),
        preemptable=(annotations.get(PREEMPTABLE) or "false").lower() == "true",
        priority_class=str(spec.get("priorityClassName") or ""), annotations=annotations,
        conditions=list(_map(obj, "status.conditions", [])),
    )


def parse_queue(obj: Mapping[str, Any]) -> QueueInfo:
    _, name = metadata(obj, namespaced=False)
    spec = _typed(obj.get("spec") or {}, Mapping, "spec")
    weight = _int(spec.get("weight", 1), "spec.weight")
    if weight < 0:
        raise InputError("spec.weight", f"must not be negative, got {weight}")
    state = _map(obj, "status.state", "Open")
    if state not in QUEUE_STATES:
        raise InputError("status.state", f"unknown state {state!r}; valid: {', '.join(QUEUE_STATES)}")
    guarantee = _typed(spec.get("guarantee") or {}, Mapping, "spec.guarantee")
    reclaimable = spec.get("reclaimable", True)
    _typed(reclaimable, bool, "spec.reclaimable")
    return QueueInfo(
        name=name, weight=weight,
        capability=parse_resource_list(spec.get("capability"), "spec.capability"),
        deserved=parse_resource_list(spec.get("deserved"), "spec.deserved"),
        guarantee=parse_resource_list(guarantee.get("resource"), "spec.guarantee.resource"),
        reclaimable=reclaimable, priority=_int(spec.get("priority", 0), "spec.priority"),
        parent=spec.get("parent") or None, state=state,
        creation=str(_map(obj, "metadata.creationTimestamp", "")),
    )


def parse_priority_class(obj: Mapping[str, Any]) -> tuple[str, int, bool]:
    _, name = metadata(obj, namespaced=False)
    value = _int(obj.get("value", 0), "value")
    return name, value, bool(obj.get("globalDefault", False))
