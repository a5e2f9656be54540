"""A pod's spec as a PodTemplate: requests as kube-scheduler computes them, selectors,
affinity, tolerations, host ports and topology spread. The pods of one Volcano task share
one template, so this runs once per template (the cache memoises it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.errors import InputError
from central.model.fields import integer, listed, str_map, typed
from central.model.objects import (
    LabelRequirement,
    PodAffinityTerm,
    PodTemplate,
    Selector,
    SpreadConstraint,
    Toleration,
)
from central.resources.vectors import add_lists, max_lists, parse_resource_list

# --- selectors, affinity, tolerations -------------------------------------------------------


def selector(raw: Any, where: str) -> Selector:
    raw = typed(raw or {}, Mapping, where)
    reqs = [LabelRequirement(str(k), "In", (str(v),)) for k, v in (raw.get("matchLabels") or {}).items()]
    for i, expr in enumerate(raw.get("matchExpressions") or []):
        reqs.append(_requirement(expr, f"{where}.matchExpressions[{i}]"))
    return Selector(tuple(reqs))


def _requirement(expr: Any, where: str) -> LabelRequirement:
    expr = typed(expr, Mapping, where)
    op = expr.get("operator")
    if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
        raise InputError(f"{where}.operator", f"unknown operator {op!r}; valid: In, NotIn, Exists, DoesNotExist, Gt, Lt")
    values = tuple(str(v) for v in typed(expr.get("values") or [], list, f"{where}.values"))
    if op in ("In", "NotIn") and not values or op in ("Gt", "Lt") and len(values) != 1:
        raise InputError(f"{where}.values", f"operator {op} needs {'one value' if op in ('Gt', 'Lt') else 'values'}")
    key = expr.get("key")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.key", "is required")
    return LabelRequirement(key, op, values)


def node_term(raw: Any, where: str) -> Selector:
    raw = typed(raw or {}, Mapping, where)
    reqs = [_requirement(e, f"{where}.matchExpressions[{i}]") for i, e in enumerate(raw.get("matchExpressions") or [])]
    for i, f in enumerate(raw.get("matchFields") or []):
        req = _requirement(f, f"{where}.matchFields[{i}]")
        if req.key != "metadata.name":
            raise InputError(f"{where}.matchFields[{i}].key", "only metadata.name is supported")
        reqs.append(req)
    return Selector(tuple(reqs))


def _pod_terms(raw: Any, where: str, weighted: bool) -> tuple[PodAffinityTerm, ...]:
    terms = []
    for i, item in enumerate(typed(raw or [], list, where)):
        item_where = f"{where}[{i}]"
        weight = 0
        if weighted:
            weight = integer(typed(item, Mapping, item_where).get("weight", 1), f"{item_where}.weight", 1)
            item_where += ".podAffinityTerm"
            item = item.get("podAffinityTerm") or {}
        item = typed(item, Mapping, item_where)
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise InputError(f"{item_where}.topologyKey", "is required")
        namespaces = tuple(str(n) for n in item.get("namespaces") or [])
        terms.append(PodAffinityTerm(selector(item.get("labelSelector"), f"{item_where}.labelSelector"), key, namespaces, weight))
    return tuple(terms)


def tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    """`spec.tolerations`; InputError names the field."""
    out = []
    for i, t in enumerate(listed(spec, "tolerations")):
        where = f"spec.tolerations[{i}]"
        t = typed(t, Mapping, where)
        op = t.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise InputError(f"{where}.operator", f"unknown operator {op!r}; valid: Equal, Exists")
        out.append(Toleration(t.get("key") or None, op, t.get("value"), t.get("effect") or None))
    return tuple(out)


# --- pods -----------------------------------------------------------------------------------


def _container_requests(c: Mapping[str, Any], where: str) -> dict[str, float]:
    resources = typed(c.get("resources") or {}, Mapping, f"{where}.resources")
    requests = parse_resource_list(resources.get("requests"), f"{where}.resources.requests")
    limits = parse_resource_list(resources.get("limits"), f"{where}.resources.limits")
    # The API server defaults a missing request to the limit.
    return {**limits, **requests}


def pod_requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """The pod's effective request, what the kubelet admits it with: the larger of the app
    containers plus sidecars and of each init container (plus the sidecars started before
    it), then the pod overhead. The node is charged this and fit is checked against it.

    Volcano charges the node only the app containers while checking fit with this figure,
    so two pods whose init containers ask 20 CPUs both land on a 32-CPU node and the kubelet
    rejects one (OutOfcpu): a deliberate difference, see docs/scheduling.md."""
    reqs: dict[str, float] = {}
    for i, c in enumerate(listed(spec, "containers")):
        reqs = add_lists(reqs, _container_requests(typed(c, Mapping, f"spec.containers[{i}]"), f"spec.containers[{i}]"))
    sidecars: dict[str, float] = {}
    init_max: dict[str, float] = {}
    for i, c in enumerate(listed(spec, "initContainers")):
        where = f"spec.initContainers[{i}]"
        c_reqs = _container_requests(typed(c, Mapping, where), where)
        if c.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            reqs = add_lists(reqs, c_reqs)
            sidecars = add_lists(sidecars, c_reqs)
            init_max = max_lists(init_max, sidecars)
        else:
            init_max = max_lists(init_max, add_lists(c_reqs, sidecars))
    overhead = parse_resource_list(spec.get("overhead"), "spec.overhead")
    effective = add_lists(max_lists(reqs, init_max), overhead)
    effective.pop("pods", None)
    return effective


def _host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int, str], ...]:
    ports = []
    for i, c in enumerate(listed(spec, "containers")):
        for j, p in enumerate(typed(c.get("ports") or [], list, f"spec.containers[{i}].ports")):
            if isinstance(p, Mapping) and p.get("hostPort"):
                port = integer(p["hostPort"], f"spec.containers[{i}].ports[{j}].hostPort", 1)
                ports.append((p.get("protocol", "TCP"), port, p.get("hostIP") or "0.0.0.0"))
    return tuple(sorted(ports))


def _spread(spec: Mapping[str, Any]) -> tuple[SpreadConstraint, ...]:
    out = []
    for i, c in enumerate(listed(spec, "topologySpreadConstraints")):
        where = f"spec.topologySpreadConstraints[{i}]"
        c = typed(c, Mapping, where)
        when = c.get("whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise InputError(f"{where}.whenUnsatisfiable", f"unknown value {when!r}; valid: DoNotSchedule, ScheduleAnyway")
        key = c.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise InputError(f"{where}.topologyKey", "is required")
        out.append(SpreadConstraint(integer(c.get("maxSkew", 1), f"{where}.maxSkew", 1), key, when,
                                    selector(c.get("labelSelector"), f"{where}.labelSelector")))
    return tuple(out)


def _guaranteed(spec: Mapping[str, Any]) -> bool:
    """Kubernetes' Guaranteed QoS class: cpu and memory limits set, and requests equal to them."""
    containers = [*listed(spec, "containers"), *listed(spec, "initContainers")]
    for c in containers:
        resources = (c or {}).get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name, limits[name])) != str(limits[name]):
                return False
    return bool(containers)


# All that a template reads of a pod's spec and of each of its containers: `pod_template` sees
# only these (`template_view`), so a field it comes to read must be added here.
_TEMPLATE_FIELDS = ("containers", "initContainers", "overhead", "affinity", "nodeSelector", "tolerations",
                    "topologySpreadConstraints")
_TEMPLATE_CONTAINER_FIELDS = ("resources", "ports", "restartPolicy")


def template_view(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The part of `spec` that `pod_template` reads; equal views make equal templates.

    The pods of one task differ in much else: their names, the API server's per-pod
    service-account volume and its mounts, the env plugin's task index."""
    view = {field: spec[field] for field in _TEMPLATE_FIELDS if field in spec}
    for field in ("containers", "initContainers"):
        if isinstance(view.get(field), list):
            view[field] = [{k: c[k] for k in _TEMPLATE_CONTAINER_FIELDS if k in c} if isinstance(c, Mapping) else c
                           for c in view[field]]
    return view


def pod_template(namespace: str, labels: dict[str, str], spec: Mapping[str, Any]) -> PodTemplate:
    resreq = pod_requests(spec)
    affinity = typed(spec.get("affinity") or {}, Mapping, "spec.affinity")
    node_aff = typed(affinity.get("nodeAffinity") or {}, Mapping, "spec.affinity.nodeAffinity")
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    req_where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required_terms = tuple(node_term(t, f"{req_where}.nodeSelectorTerms[{i}]")
                           for i, t in enumerate(typed(required, Mapping, req_where).get("nodeSelectorTerms") or []))
    pref_where = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = tuple(
        (integer(typed(p, Mapping, f"{pref_where}[{i}]").get("weight", 1), f"{pref_where}[{i}].weight", 1),
         node_term(p.get("preference"), f"{pref_where}[{i}].preference"))
        for i, p in enumerate(typed(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or [], list, pref_where)))
    pa = typed(affinity.get("podAffinity") or {}, Mapping, "spec.affinity.podAffinity")
    paa = typed(affinity.get("podAntiAffinity") or {}, Mapping, "spec.affinity.podAntiAffinity")
    req_key, pref_key = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    return PodTemplate(
        namespace=namespace,
        resreq=tuple(sorted(resreq.items())),
        labels=tuple(sorted(labels.items())),
        node_selector=tuple(sorted(str_map(spec, "nodeSelector").items())),
        required_node_terms=required_terms,
        preferred_node_terms=preferred,
        tolerations=tolerations(spec),
        host_ports=_host_ports(spec),
        pod_affinity=_pod_terms(pa.get(req_key), f"spec.affinity.podAffinity.{req_key}", False),
        pod_anti_affinity=_pod_terms(paa.get(req_key), f"spec.affinity.podAntiAffinity.{req_key}", False),
        preferred_pod_affinity=_pod_terms(pa.get(pref_key), f"spec.affinity.podAffinity.{pref_key}", True),
        preferred_pod_anti_affinity=_pod_terms(paa.get(pref_key), f"spec.affinity.podAntiAffinity.{pref_key}", True),
        spread=_spread(spec),
        guaranteed=_guaranteed(spec),
    )
