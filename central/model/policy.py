"""Namespace policies the scheduler reads: ResourceQuotas and PodDisruptionBudgets.

Both are read as Volcano's scheduler reads them, from their status, which Kubernetes'
controllers keep (the quota controller `hard` and `used`, the disruption controller
`disruptionsAllowed` and `disruptedPods`). A manifest written by hand has no status: there
a ResourceQuota's `spec.hard` stands for its hard limits, with nothing used, and a PDB allows
no disruption (what Kubernetes shows before its controller has counted the pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from central.model.fields import get_path, integer, metadata, typed
from central.model.objects import Selector
from central.model.podspec import selector
from central.model.quota import quantity_list


@dataclass(frozen=True, slots=True)
class ResourceQuotaInfo:
    namespace: str
    name: str
    hard: dict[str, Decimal]  # status.hard (spec.hard without a status)
    used: dict[str, Decimal]  # status.used


@dataclass(frozen=True, slots=True)
class PdbInfo:
    namespace: str
    name: str
    selector: Selector | None  # None: the PDB selects no pod (no selector, or an empty one)
    disruptions_allowed: int  # status.disruptionsAllowed
    disrupted_pods: frozenset[str]  # status.disruptedPods: evictions the API server already granted


def parse_resource_quota(obj: Mapping[str, Any]) -> ResourceQuotaInfo:
    namespace, name = metadata(obj, namespaced=True)
    status = typed(obj.get("status") or {}, Mapping, "status")
    if "hard" in status:
        hard = quantity_list(status.get("hard"), "status.hard")
    else:
        hard = quantity_list(get_path(obj, "spec.hard", {}), "spec.hard")
    return ResourceQuotaInfo(namespace, name, hard, quantity_list(status.get("used"), "status.used"))


def parse_pdb(obj: Mapping[str, Any]) -> PdbInfo:
    namespace, name = metadata(obj, namespaced=True)
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    raw = spec.get("selector")
    chosen = selector(raw, "spec.selector") if raw is not None else None
    if chosen is not None and not chosen.requirements:  # Volcano: a nil or empty selector matches nothing
        chosen = None
    status = typed(obj.get("status") or {}, Mapping, "status")
    allowed = integer(status.get("disruptionsAllowed", 0), "status.disruptionsAllowed", 0)
    disrupted = typed(status.get("disruptedPods") or {}, Mapping, "status.disruptedPods")
    return PdbInfo(namespace, name, chosen, allowed, frozenset(str(pod) for pod in disrupted))
