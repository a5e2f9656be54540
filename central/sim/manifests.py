"""Reading manifests: multi-document YAML files, or directories of them, into a cache.

This is the YAML feed of the cluster cache (the Kubernetes adapter is the other one).
Volcano Jobs are expanded into their PodGroup and pods as the job controller would;
Deployments, ReplicaSets, StatefulSets and batch Jobs whose pods name the scheduler into their
pods and PodGroup, as their controllers and the PodGroup controller would (workloads.py).
Kinds the scheduler has no use for (Services, ConfigMaps, ...), and workloads of other
schedulers, are counted and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from central.errors import InputError
from central.manifests import read_objects
from central.model.cache import ClusterCache
from central.model.drastore import DRA_KINDS
from central.model.fields import object_ref
from central.model.jobs import expand_job
from central.sim.workloads import expand_workload, is_workload

# The order objects enter the cache: what others refer to comes first.
APPLY_ORDER = ("PriorityClass", "Queue", "Node", "HyperNode", "ResourceQuota", "PodDisruptionBudget",
               *DRA_KINDS, "PodGroup", "Pod")


@dataclass
class Manifests:
    objects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (source, object)
    skipped: dict[str, int] = field(default_factory=dict)  # kind -> count


def read_manifests(paths: list[str], scheduler_name: str = "volcano") -> Manifests:
    out = Manifests()
    for path in paths:
        for source, obj in read_objects(path):
            _add(source, obj, out, scheduler_name)
    return out


def _add(source: str, obj: dict[str, Any], out: Manifests, scheduler_name: str) -> None:
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise InputError(f"{source}: {object_ref(obj)}", "kind is required")
    if kind == "Job" and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        try:
            podgroup, pods = expand_job(obj)
        except InputError as err:
            raise err.within(f"{source}: {object_ref(obj)}") from None
        out.objects.append((source, podgroup))
        out.objects.extend((source, pod) for pod in pods)
    elif is_workload(obj):
        try:
            made = expand_workload(obj, scheduler_name)
        except InputError as err:
            raise err.within(source) from None
        if not made:
            out.skipped[kind] = out.skipped.get(kind, 0) + 1
        out.objects.extend((source, made_obj) for made_obj in made)
    elif kind in APPLY_ORDER:
        out.objects.append((source, obj))
    else:
        out.skipped[kind] = out.skipped.get(kind, 0) + 1


def sources_of(manifests: Manifests, kind: str) -> dict[str, str]:
    """Object name -> the file it came from, for messages about objects of `kind`."""
    return {(obj.get("metadata") or {}).get("name", ""): source for source, obj in manifests.objects if obj["kind"] == kind}


def load_into(cache: ClusterCache, manifests: Manifests) -> None:
    rank = {kind: i for i, kind in enumerate(APPLY_ORDER)}
    for source, obj in sorted(manifests.objects, key=lambda so: rank[so[1]["kind"]]):
        try:
            cache.apply(obj)
        except InputError as err:
            raise err.within(source) from None
