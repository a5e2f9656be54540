"""Checks of a task's pod template, the part of Kubernetes' own pod validation jobs need.

validate_template(problems, template, where)          containers, images, names, quantities,
                                                      requests <= limits, restartPolicy,
                                                      pod-level spec.resources as Kubernetes
                                                      checks them (PodLevelResources), and no
                                                      annotation only the scheduler may set
                                                      (the pods webhook would refuse every pod
                                                      of the task, leaving the Job Pending)
validate_topology_policy(problems, task, where)       NUMA policies need whole CPUs
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.admission import fields
from central.admission.fields import Problems, add, fmt, quote
from central.errors import InputError
from central.model.annotations import SCHEDULER_ONLY
from central.model.fields import list_at, map_at
from central.resources.quantity import parse_quantity

Declared = dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]  # containers' (requests, limits) by kind

TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
POD_LEVEL_RESOURCES = ("cpu", "memory")  # and hugepages-*


def validate_template(problems: Problems, raw: Any, where: str) -> None:
    template = fields.mapping(problems, raw, where)
    if template is None:
        return
    meta = template.get("metadata")
    given = meta.get("annotations") if isinstance(meta, Mapping) else None
    for key in sorted(SCHEDULER_ONLY & set(given) if isinstance(given, Mapping) else ()):
        add(problems, f"{where}.metadata.annotations[{key}]",
            "is set by the scheduler when it places the pod; a pod created with it is refused")
    spec = fields.mapping(problems, template.get("spec"), f"{where}.spec")
    if spec is None:
        return
    if spec.get("restartPolicy") not in (None, "Always", "OnFailure", "Never"):
        add(
            problems,
            f"{where}.spec.restartPolicy",
            f"must be Always, OnFailure or Never, got {quote(spec['restartPolicy'])}",
        )
    declared: Declared = {}
    for key in ("containers", "initContainers"):
        containers = fields.sequence(problems, spec.get(key), f"{where}.spec.{key}")
        if key == "containers" and containers == []:
            add(problems, f"{where}.spec.containers", "at least one container is required")
        seen: set[str] = set()
        for j, raw_container in enumerate(containers or []):
            path = f"{where}.spec.{key}[{j}]"
            container = fields.mapping(problems, raw_container, path)
            if container is None:
                continue
            cname = fields.dns_label(problems, container.get("name"), f"{path}.name")
            if cname in seen:
                add(problems, f"{path}.name", f"duplicate container name {quote(cname)}")
            seen.add(cname or "")
            if not container.get("image"):
                add(problems, f"{path}.image", "is required")
            res = fields.mapping(problems, container.get("resources"), f"{path}.resources") or {}
            requests = fields.resources(problems, res.get("requests"), f"{path}.resources.requests")
            limits = fields.resources(problems, res.get("limits"), f"{path}.resources.limits")
            fields.at_most(problems, requests, limits, f"{path}.resources.requests", f"{path}.resources.limits")
            declared.setdefault(key, []).append((requests, limits))
    if spec.get("resources") is not None:
        _validate_pod_resources(problems, spec["resources"], declared, f"{where}.spec.resources")


def _validate_pod_resources(problems: Problems, raw: Any, declared: Declared, path: str) -> None:
    """Pod-level resources: cpu, memory and hugepages only; requests <= limits; requests at
    least what the containers ask together (the larger of the app containers' sum and any
    init container's); no container's limit above the pod's."""
    res = fields.mapping(problems, raw, path) or {}
    requests = fields.resources(problems, res.get("requests"), f"{path}.requests")
    limits = fields.resources(problems, res.get("limits"), f"{path}.limits")
    for kind, values in (("requests", requests), ("limits", limits)):
        for name in sorted(values):
            if name not in POD_LEVEL_RESOURCES and not name.startswith("hugepages-"):
                add(problems, f"{path}.{kind}.{name}", "pod-level resources support only cpu, memory and hugepages-*")
    fields.at_most(problems, requests, limits, f"{path}.requests", f"{path}.limits")
    app, init = declared.get("containers", []), declared.get("initContainers", [])
    for name in sorted(requests):
        together = max([sum((r.get(name, 0) for r, _ in app), start=0)] + [r.get(name, 0) for r, _ in init])
        if together > requests[name]:
            add(problems, f"{path}.requests.{name}",
                f"{fmt(requests[name], name)} must be >= the containers' aggregate requests ({fmt(together, name)})")
    for name in sorted(limits):
        for kind, group in (("containers", app), ("initContainers", init)):
            for j, (_, own) in enumerate(group):
                if name in own and own[name] > limits[name]:
                    add(problems, f"{path}.limits.{name}",
                        f"{fmt(limits[name], name)} must be >= the limit of {kind}[{j}] ({fmt(own[name], name)})")


def validate_topology_policy(problems: Problems, task: Mapping[str, Any], where: str) -> None:
    """NUMA placement pins whole CPUs, so every container must ask for an integer number of them."""
    policy = task.get("topologyPolicy")
    if policy in (None, "", "none"):
        return
    if policy not in TOPOLOGY_POLICIES:
        add(problems, f"{where}.topologyPolicy", f"must be one of {', '.join(TOPOLOGY_POLICIES)}, got {quote(policy)}")
        return
    spec = map_at(map_at(task, "template"), "spec")
    for key in ("containers", "initContainers"):
        for j, container in enumerate(list_at(spec, key)):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            resources = resources if isinstance(resources, Mapping) else {}
            source = "requests" if (resources.get("requests") or {}) else "limits"
            raw = (resources.get(source) or {}) if isinstance(resources.get(source) or {}, Mapping) else {}
            try:
                cpu = parse_quantity(raw.get("cpu", 0))
            except InputError:
                continue  # reported by the template check
            if cpu != cpu.to_integral_value() or cpu == 0:
                add(
                    problems,
                    f"{where}.template.spec.{key}[{j}].resources.{source}.cpu",
                    f"must be a whole number of CPUs (> 0) with topologyPolicy {quote(policy)}",
                )
