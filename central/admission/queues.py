"""Admission of Queues (scheduling.volcano.sh/v1beta1, cluster-scoped).

    mutate_queue(queue) -> dict                                  weight 1, reclaimable true, parent root
    validate_queue(queue, cluster, config, old) -> list          every problem as "<field.path>: <message>"
    validate_queue_delete(name, cluster) -> list                 why the queue may not be deleted

Rules (Volcano's queue webhook plus its hierarchy checks): state Open or Closed; weight in
1..65535; guarantee <= deserved <= capability per dimension, and every guaranteed resource
has a deserved amount; the HDRF annotations `volcano.sh/hierarchy` ("root/a/b") and
`volcano.sh/hierarchy-weights` ("1/2/3") have as many parts, the weights are numbers > 0,
and no other queue's path lies below this one's; the parent exists and is not the queue
itself, the hierarchy has no cycle and is at most `max_queue_depth` deep; a parent holds no
PodGroups (Caldera's, stricter than Volcano) and, when it has no child yet, no allocated pods
(`status.allocated.pods`, Volcano's), these checked when a queue is created or moved, as
Volcano does; a queue's capability is within every ancestor's; the children's guarantee and
deserved together fit in the parent's. A dimension a queue leaves unset is unlimited (Volcano
once read an unset parent guarantee as 0, Volcano #5634). The tree checks run on the cluster as it
would be after the change, so an update that shrinks a parent below its children is refused
too. root's quotas are immutable. Deletion follows Volcano (validate_queue_delete).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from central.admission import fields
from central.admission.cluster import DEFAULT_QUEUE, ROOT, Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.fields import Problems, add, quote
from central.model.fields import map_at
from central.model.parse import parse_queue

QUOTAS = (("capability", "spec.capability"), ("deserved", "spec.deserved"), ("guarantee", "spec.guarantee.resource"))
MAX_WEIGHT = 65535


def mutate_queue(queue: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(queue))
    spec = out.setdefault("spec", {})
    if not isinstance(spec, dict):
        return out
    spec.setdefault("weight", 1)
    spec.setdefault("reclaimable", True)
    meta = out.get("metadata")
    if not (isinstance(meta, dict) and meta.get("name") == ROOT):
        spec["parent"] = spec.get("parent") or ROOT
    return out


def quotas(queue: Mapping[str, Any], problems: Problems | None = None) -> dict[str, dict[str, Decimal]]:
    """{"capability"|"deserved"|"guarantee": {resource: quantity}}; bad quantities go to problems."""
    sink: Problems = [] if problems is None else problems
    spec = map_at(queue, "spec")
    raw = {
        "capability": spec.get("capability"),
        "deserved": spec.get("deserved"),
        "guarantee": map_at(spec, "guarantee").get("resource"),
    }
    return {key: fields.resources(sink, raw[key], path) for key, path in QUOTAS}


def validate_queue(
    queue: Mapping[str, Any],
    cluster: Cluster,
    config: AdmissionConfig = DEFAULT_CONFIG,
    old: Mapping[str, Any] | None = None,
) -> Problems:
    problems: Problems = []
    meta = fields.mapping(problems, queue.get("metadata"), "metadata") or {}
    name = fields.dns_label(problems, meta.get("name"), "metadata.name", max_length=253)
    spec = fields.mapping(problems, queue.get("spec"), "spec")
    if spec is None or name is None:
        return problems
    fields.integer(problems, spec.get("weight", 1), "spec.weight", minimum=1, maximum=MAX_WEIGHT)
    fields.integer(problems, spec.get("priority", 0), "spec.priority", minimum=None)
    if not isinstance(spec.get("reclaimable", True), bool):
        add(problems, "spec.reclaimable", f"must be true or false, got {quote(spec['reclaimable'])}")
    for path, state in (("status.state", (queue.get("status") or {}).get("state")), ("spec.state", spec.get("state"))):
        if state is not None and state not in ("Open", "Closed"):
            add(problems, path, f"queue state must be in [Open, Closed], got {quote(state)}")
    own = quotas(queue, problems)
    _ordered_quotas(problems, own)
    _validate_hierarchy_annotations(problems, queue, name, cluster)
    fields.interpreted(problems, meta.get("annotations"), "Queue")
    if not problems:
        fields.readable(problems, parse_queue, queue)
    if name == ROOT:
        current = quotas(cluster.queues[ROOT])
        if own != current:
            add(problems, "spec", "the quotas (capability, deserved, guarantee) of the root queue are immutable")
        return problems
    parent = spec.get("parent") or ROOT
    if not isinstance(parent, str):
        add(problems, "spec.parent", f"must be a queue name, got {quote(parent)}")
    elif parent == name:
        add(problems, "spec.parent", "a queue cannot be its own parent")
    elif parent not in cluster.queues:
        add(problems, "spec.parent", f"parent queue {quote(parent)} does not exist")
    elif old is None or _parent(old) != parent or quotas(old) != own:
        _validate_tree(problems, cluster.with_queue(queue), name, config, moved=old is None or _parent(old) != parent)
    return problems


def _parent(queue: Mapping[str, Any]) -> object:
    return map_at(queue, "spec").get("parent") or ROOT


def _placement(problems: Problems, cluster: Cluster, name: str, parent: str, depth: int,
               config: AdmissionConfig) -> None:
    if depth > config.max_queue_depth:
        add(problems, "spec.parent", f"queue depth {depth} exceeds the maximum allowed depth {config.max_queue_depth}")
    if parent != ROOT and cluster.podgroups_in(parent):
        add(
            problems, "spec.parent", f"parent queue {quote(parent)} already holds PodGroups; only leaf queues hold jobs"
        )
    pods = _allocated_pods(cluster.queues[parent])
    if parent != ROOT and pods and not [c for c in cluster.children(parent) if c != name]:
        add(problems, "spec.parent", f"queue {quote(parent)} cannot be the parent of {quote(name)}: "
                                     f"it has allocated pods ({pods})")


def _ordered_quotas(problems: Problems, own: Mapping[str, Mapping[str, Decimal]]) -> None:
    """guarantee <= deserved <= capability per resource, a guaranteed resource deserved too; in
    Volcano's words (`deserved[cpu]=2 must be >= guarantee[cpu]=3`) at the field at fault."""
    guarantee, deserved, capability = own["guarantee"], own["deserved"], own["capability"]
    for res in sorted(guarantee):
        wanted = f"guarantee[{res}]={fields.fmt(guarantee[res], res)}"
        if res not in deserved:
            add(problems, f"spec.deserved.{res}", f"deserved[{res}] must be >= {wanted}")
        elif deserved[res] < guarantee[res]:
            add(problems, f"spec.deserved.{res}",
                f"deserved[{res}]={fields.fmt(deserved[res], res)} must be >= {wanted}")
    for res in sorted(deserved):
        if res in capability and deserved[res] > capability[res]:
            add(problems, f"spec.deserved.{res}", f"deserved[{res}]={fields.fmt(deserved[res], res)} "
                                                  f"must be <= capability[{res}]={fields.fmt(capability[res], res)}")
    for res in sorted(guarantee):
        if res in capability and guarantee[res] > capability[res]:
            add(problems, f"spec.guarantee.resource.{res}", f"guarantee[{res}]={fields.fmt(guarantee[res], res)} "
                                                            f"must be <= capability[{res}]={fields.fmt(capability[res], res)}")


def _validate_tree(problems: Problems, cluster: Cluster, name: str, config: AdmissionConfig, moved: bool) -> None:
    """The hierarchy checks. Where the queue sits (depth, a parent without jobs) is checked only
    when it is placed (`moved`: created, or its parent changed), as Volcano does, so an update of
    anything else (a finalizer the garbage collector removes) never fails on what the parent
    holds since; the quotas, whenever they or the parent change."""
    ancestors: list[str] = []
    current = cluster.parent(name)
    while current is not None:
        if current == name or current in ancestors:
            add(problems, "spec.parent", f"the queue hierarchy has a cycle: {' -> '.join([name, *ancestors, current])}")
            return
        if current not in cluster.queues:
            break  # a dangling ancestor (deleted, or not seen yet): nothing above it is known
        ancestors.append(current)
        current = cluster.parent(current)
    parent = ancestors[0]
    if moved:
        _placement(problems, cluster, name, parent, len(ancestors), config)
    own = quotas(cluster.queues[name])
    for ancestor in ancestors:
        fields.at_most(
            problems,
            own["capability"],
            quotas(cluster.queues[ancestor])["capability"],
            "spec.capability",
            f"ancestor queue {quote(ancestor)} spec.capability",
        )
    _children_fit(problems, cluster, parent, f"the {{key}} of parent queue {quote(parent)}")
    _children_fit(problems, cluster, name, "this queue's {key}")
    for descendant in _descendants(cluster, name):
        theirs = quotas(cluster.queues[descendant])["capability"]
        for res in sorted(theirs):
            if res in own["capability"] and theirs[res] > own["capability"][res]:
                add(
                    problems,
                    f"spec.capability.{res}",
                    f"{fields.fmt(own['capability'][res], res)} is less than the capability "
                    f"of descendant queue {quote(descendant)} ({fields.fmt(theirs[res], res)})",
                )


HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"


def _validate_hierarchy_annotations(problems: Problems, queue: Mapping[str, Any], name: str, cluster: Cluster) -> None:
    annotations = (queue.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, Mapping):
        return
    path, weights = str(annotations.get(HIERARCHY, "")), str(annotations.get(HIERARCHY_WEIGHTS, ""))
    if not path and not weights:
        return
    where = "metadata.annotations"
    if not path or not weights or len(path.split("/")) != len(weights.split("/")):
        add(problems, f"{where}[{HIERARCHY}]", f"{HIERARCHY} must have the same length with {HIERARCHY_WEIGHTS}: "
                                               f"{quote(path)} and {quote(weights)}")
        return
    for part in weights.split("/"):
        try:
            weight = float(part)
        except ValueError:
            weight = math.nan
        if not weight > 0:  # NaN too
            add(problems, f"{where}[{HIERARCHY_WEIGHTS}]",
                f"weights in {HIERARCHY_WEIGHTS} must be larger than 0: {quote(part)} in {quote(weights)}")
            return
    for other, obj in sorted(cluster.queues.items()):
        theirs = str(((obj.get("metadata") or {}).get("annotations") or {}).get(HIERARCHY, ""))
        if other != name and theirs.startswith(path + "/"):
            add(problems, f"{where}[{HIERARCHY}]",
                f"{quote(path)} may not be a path above {quote(theirs)} of queue {quote(other)}")
            return


def _allocated_pods(queue: Mapping[str, Any]) -> int:
    allocated = map_at(map_at(queue, "status"), "allocated")
    try:
        return int(str(allocated.get("pods", 0)))
    except ValueError:
        return 0


def _children_fit(problems: Problems, cluster: Cluster, parent: str, bound: str) -> None:
    """Σ children's guarantee and deserved <= the parent's, per dimension the parent sets."""
    limits = quotas(cluster.queues[parent])
    for key, path in QUOTAS[1:]:
        total: dict[str, Decimal] = {}
        for child in cluster.children(parent):
            for res, value in quotas(cluster.queues[child])[key].items():
                total[res] = total.get(res, Decimal(0)) + value
        for res in sorted(total):
            if res in limits[key] and total[res] > limits[key][res]:
                add(
                    problems,
                    f"{path}.{res}",
                    f"the child queues of {quote(parent)} together have {key} "
                    f"{fields.fmt(total[res], res)}, more than {bound.format(key=key)} "
                    f"({fields.fmt(limits[key][res], res)})",
                )


def _descendants(cluster: Cluster, name: str) -> list[str]:
    out: list[str] = []
    stack = cluster.children(name)
    while stack:
        child = stack.pop()
        if child not in out and child != name:
            out.append(child)
            stack.extend(cluster.children(child))
    return out


def validate_queue_delete(name: str, cluster: Cluster, config: AdmissionConfig = DEFAULT_CONFIG) -> Problems:
    """Volcano's rules: root and default stay; a queue with child queues stays; with
    `queue_allocated_pods_check` (Volcano's --enable-queue-allocated-pods-check, off by
    default) so does one with allocated pods. PodGroups left in the queue do not stop it: they
    wait, unscheduled, until a queue of that name exists again."""
    problems: Problems = []
    if name in (ROOT, DEFAULT_QUEUE):
        add(problems, "metadata.name", f"`{name}` queue can not be deleted")
        return problems
    pods = _allocated_pods(cluster.queues[name]) if name in cluster.queues else 0
    if config.queue_allocated_pods_check and pods:
        add(problems, "metadata.name", f"queue {name} cannot be deleted because it has allocated Pods: {pods}")
    children = cluster.children(name) if name in cluster.queues else []
    if children:
        add(problems, "metadata.name", f"queue {name} can not be deleted because it has {len(children)} child queues: "
                                       f"{', '.join(children)}")
    return problems
