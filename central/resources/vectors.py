"""Resource vectors with Volcano's semantics.

A resource list from Kubernetes (`{"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}`)
becomes a dense float64 vector over the cluster's resource dimensions, in Volcano's units:
cpu in millicores, memory in bytes, every scalar (extended) resource in milli-units
(`nvidia.com/gpu: 1` is 1000). A missing dimension is zero. `pods` is not a dimension: it is
a per-node count checked by the pod-count predicate, as in Volcano.

Comparisons follow Volcano's `LessEqual`: a <= b on every dimension, within a tolerance of
0.1 (one tenth of a millicore or of a byte), so float rounding never rejects an exact fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

import numpy as np

from central.errors import InputError
from central.resources.quantity import INT64_MAX, parse_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPSILON = 0.1  # Volcano's minResource

Vector = np.ndarray


def is_scheduled_resource(name: str) -> bool:
    """Resources the scheduler accounts for: cpu, memory and scalar (extended, hugepages) ones.

    Like Volcano, ephemeral-storage and other native non-scalar names are not scheduled on.
    """
    return name in (CPU, MEMORY) or "/" in name or name.startswith("hugepages-")


def canonical(name: str, quantity: Decimal) -> float:
    """A quantity in the unit the scheduler computes in (see the module docstring)."""
    if name == MEMORY or name == PODS:
        return float(quantity)
    return float(quantity * 1000)


def parse_resource_list(raw: object, where: str) -> dict[str, float]:
    """A Kubernetes ResourceList as {name: canonical value}; InputError names the bad field."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(where, f"expected a map of resource name to quantity, got {type(raw).__name__}")
    out: dict[str, float] = {}
    for name, value in raw.items():
        key = (name, value) if type(value) is str else None  # pods repeat their few quantities
        if key is not None and key in _PARSED:
            parsed = _PARSED[key]
        else:
            parsed = _entry(name, value, where)
            if key is not None:
                _remember(key, parsed)
        if parsed is not None:
            out[name] = parsed
    return out


def _entry(name: object, value: object, where: str) -> float | None:
    """One entry's canonical value; None for a resource the scheduler does not account for."""
    if not isinstance(name, str):
        raise InputError(f"{where}", f"resource names must be strings, got {name!r}")
    try:
        quantity = parse_quantity(value)
    except InputError as err:
        raise InputError(f"{where}.{name}", err.message) from None
    if quantity < 0:
        raise InputError(f"{where}.{name}", f"must not be negative, got {value!r}")
    if not (is_scheduled_resource(name) or name == PODS):
        return None
    amount = canonical(name, quantity)
    if amount > INT64_MAX:  # cpu and scalars count in milli-units, bounded like kube's MilliValue
        unit = _UNITS.get(name, "milli-units")
        raise InputError(f"{where}.{name}", f"too large: {amount:.0f} in {unit} exceeds int64")
    return amount


# (name, quantity text) -> what `_entry` gave, for valid entries only; emptied when full, so
# that no stream of distinct texts makes it grow without bound
_PARSED: dict[tuple[object, str], float | None] = {}
_PARSED_MAX = 4096


def _remember(key: tuple[object, str], parsed: float | None) -> None:
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = parsed


_UNITS = {MEMORY: "bytes", PODS: "pods", CPU: "millicores"}


def add_lists(*lists: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for items in lists:
        for name, value in items.items():
            out[name] = out.get(name, 0.0) + value
    return out


def max_lists(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    out = dict(a)
    for name, value in b.items():
        out[name] = max(out.get(name, 0.0), value)
    return out


def format_value(name: str, value: float) -> str:
    """A canonical value back in Kubernetes notation, for people and for statuses the API
    parses again (`:g` wrote 4244750m as '4.24475e+06m', which no quantity parser takes)."""
    if name == MEMORY:
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size and value % size == 0:
                return f"{int(value // size)}{suffix}"
        return _plain(value)
    if value % 1000 == 0:
        return f"{int(value // 1000)}"
    return f"{_plain(value)}m"


def _plain(value: float) -> str:
    """Digits, never an exponent: 8221750, not 8.22175e+06."""
    return str(int(value)) if float(value).is_integer() else f"{value:f}".rstrip("0")


class Dimensions:
    """The resource names of a cluster, each with a fixed column index.

    cpu and memory are always columns 0 and 1; scalar resources are appended as they appear.
    """

    def __init__(self, names: Iterable[str] = ()):
        self.names: list[str] = [CPU, MEMORY]
        self.index: dict[str, int] = {CPU: 0, MEMORY: 1}
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self.names)

    def add(self, name: str) -> bool:
        """Register a dimension; True if it was new."""
        if name == PODS or name in self.index:
            return False
        self.index[name] = len(self.names)
        self.names.append(name)
        return True

    def vector(self, items: Mapping[str, float], missing: float = 0.0) -> Vector:
        """Dense vector of `items`; `missing` fills dimensions not named (inf for a capability)."""
        out = np.full(len(self.names), missing, dtype=np.float64)
        for name, value in items.items():
            col = self.index.get(name)
            if col is not None:
                out[col] = value
        return out

    def zeros(self) -> Vector:
        return np.zeros(len(self.names), dtype=np.float64)


def less_equal(a: Vector, b: Vector) -> bool:
    """Volcano's LessEqual with the zero default: a <= b on all dimensions, within EPSILON."""
    return bool(np.all(a < b + EPSILON))


def less_equal_on(a: Vector, b: Vector, dims: Vector) -> bool:
    """Volcano's LessEqualWithDimension: compare only the dimensions where `dims` is non-zero."""
    mask = dims > EPSILON
    return bool((a[mask] < b[mask] + EPSILON).all())  # the method: no Python wrapper on a hot path


def dominant_share(allocated: Vector, total: Vector) -> float:
    """max over resources of allocated/total, where x/0 is 1 (0/0 is 0): DRF's share."""
    has = total > EPSILON
    share = float(np.divide(allocated, total, out=np.zeros_like(allocated), where=has).max(initial=0.0))
    if share < 1.0 and np.any(allocated[~has] > EPSILON):
        return 1.0
    return share


def repeats_exactly(base: Vector, req: Vector, times: int) -> bool:
    """Is `base` plus (or minus) `times` x `req`, added at once, the very figure that adding
    `req` `times` times one by one gives? So where every figure is integral (millicores,
    bytes, devices) and the sums stay well inside a float's exact range."""
    both = np.concatenate((base, req))
    if not (np.trunc(both) == both).all():  # a fraction, or NaN
        return False
    return float(np.abs(base).max(initial=0.0) + np.abs(req).max(initial=0.0) * times) < 2.0 ** 52


def add_repeated(vec: Vector, req: Vector, times: int, sign: int = 1) -> None:
    """`vec += sign * req`, `times` times, in place: at once where that gives the same figures
    (`repeats_exactly`), else one by one."""
    if repeats_exactly(vec, req, times):
        vec += (sign * times) * req
    else:
        step = sign * req
        for _ in range(times):
            vec += step
