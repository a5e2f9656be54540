"""A pod's ResourceQuota usage, as Volcano's job controller writes it into a PodGroup's minResources.

Volcano adds up `GetPodQuotaUsage` per pod (Kubernetes' quota evaluator `PodUsageFunc`, then
each non-native `requests.<name>` also under `<name>`), so a Job's PodGroup carries keys a
scheduler does not schedule on: `pods` and `count/pods` (one per pod), `requests.cpu`,
`limits.memory`, `requests.nvidia.com/gpu`... Caldera writes the same keys; the scheduler
reads only the ones it schedules on (`is_quota_only`).

Requests and limits are the pod's as Kubernetes computes them (`PodRequests`, `PodLimits`):
app containers and sidecars added up, the larger of that and each init container (with the
sidecars started before it), then the pod overhead (to limits only where a limit is set).
Requests are the template's own: a Job's template is not a Pod, so nothing defaults a missing
request to its limit before Volcano reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from central.errors import InputError
from central.model.fields import listed, typed
from central.resources.quantity import parse_quantity
from central.resources.vectors import format_value

BYTES = ("memory", "ephemeral-storage")
QUOTA_PREFIXES = ("requests.", "limits.", "count/")


def is_quota_only(name: str) -> bool:
    """A minResources key that only a ResourceQuota reads (`pods`, `count/pods`, `requests.cpu`...)."""
    return name == "pods" or name.startswith(QUOTA_PREFIXES)


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    return not _native(name) and not name.startswith("requests.")


def quantity_list(raw: Any, where: str) -> dict[str, Decimal]:
    """A ResourceList with every name kept (quota names too), as exact quantities."""
    out = {}
    for name, value in typed(raw or {}, Mapping, where).items():
        try:
            out[str(name)] = parse_quantity(value)
        except InputError as err:
            raise InputError(f"{where}.{name}", err.message) from None
    return out


def _add(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, Decimal(0)) + value
    return out


def _max(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> dict[str, Decimal]:
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, value), value)
    return out


def pod_totals(spec: Mapping[str, Any], field: str) -> dict[str, Decimal]:
    """Kubernetes' PodRequests (`field` "requests") or PodLimits ("limits") of a pod spec."""
    total: dict[str, Decimal] = {}
    for i, c in enumerate(listed(spec, "containers")):
        total = _add(total, quantity_list((c.get("resources") or {}).get(field), f"spec.containers[{i}].resources.{field}"))
    sidecars: dict[str, Decimal] = {}
    init_max: dict[str, Decimal] = {}
    for i, c in enumerate(listed(spec, "initContainers")):
        own = quantity_list((c.get("resources") or {}).get(field), f"spec.initContainers[{i}].resources.{field}")
        if c.get("restartPolicy") == "Always":
            total, sidecars = _add(total, own), _add(sidecars, own)
            init_max = _max(init_max, sidecars)
        else:
            init_max = _max(init_max, _add(own, sidecars))
    total = _max(total, init_max)
    overhead = quantity_list(spec.get("overhead"), "spec.overhead")
    if field == "requests":
        return _add(total, overhead)
    return {name: value + overhead.get(name, Decimal(0)) for name, value in total.items()}


def quota_usage(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """One pod's usage as Volcano's GetPodQuotaUsage reports it."""
    requests, limits = pod_totals(spec, "requests"), pod_totals(spec, "limits")
    usage = {"count/pods": Decimal(1), "pods": Decimal(1)}
    for name in ("cpu", *BYTES):
        if name in requests:
            usage[name] = usage[f"requests.{name}"] = requests[name]
        if name in limits:
            usage[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[f"requests.{name}"] = value
        elif _extended(name):  # requests.<name> by the evaluator, <name> again by Volcano
            usage[f"requests.{name}"] = usage[name] = value
    return usage


def format_quantity(name: str, amount: Decimal) -> str:
    """A summed quantity in Kubernetes notation: bytes as memory is written, the rest as cpu."""
    base = name.split(".", 1)[1] if name.startswith(("requests.", "limits.")) else name
    if base in BYTES or base.startswith("hugepages-"):
        return format_value("memory", float(amount))
    if name in ("pods", "count/pods"):
        return str(int(amount))
    return format_value("cpu", float(amount * 1000))
