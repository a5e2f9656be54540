"""Dynamic Resource Allocation objects (resource.k8s.io/v1) and the structured allocator.

Parsing turns DeviceClasses, ResourceSlices and ResourceClaims into small frozen records. Bad
input faults that one object (its `fault` names the object and field) and the rest still work:
a slice listing a device twice publishes nothing, a class or request whose selector does not
compile matches nothing, a claim naming a missing class cannot be allocated.

`allocate` is kube-scheduler's structured allocation for the claims of one pod on one node:
each request takes exactly `count` devices (or, for `allocationMode: All`, every matching device
on the node, none of them in use), devices of the class and passing every CEL selector, not
taken by other claims (admin access may use taken devices and takes none), and every
`matchAttribute` constraint holds across the requests it names. The search backtracks, so a
constraint that the first choice breaks can still be met by another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING
from typing import Any

from central.errors import InputError
from central.model.dracel import SelectorError, compile_selector, device_activation, matches
from central.resources.quantity import parse_quantity

DeviceId = tuple[str, str, str]  # (driver, pool, device)
_SEARCH_LIMIT = 100_000  # device choices tried per node before giving up (kube-scheduler also bounds its search)


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    name: str
    node: str | None  # None: reachable from every node (a slice with allNodes)
    attributes: Mapping[str, Any]  # fully qualified "domain/name" -> value
    activation: Any = field(compare=False, repr=False)
    # selector -> answer: a device never changes (a new slice makes new devices), and a CEL
    # evaluation costs milliseconds in pure Python, so each is evaluated once per device
    answers: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    # what a selector can see of the device (driver, attributes, capacity), hashable: devices
    # alike (the 8 GPUs of a thousand nodes) share one evaluation per selector
    seen_by_cel: Any = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> DeviceId:
        return (self.driver, self.pool, self.name)

    def passes(self, selector: str) -> bool:
        answer = self.answers.get(selector)
        if answer is None:
            shared = (selector, self.seen_by_cel) if self.seen_by_cel is not None else None
            answer = _SHARED_ANSWERS.get(shared) if shared is not None else None
            if answer is None:
                answer = matches(selector, self.activation)
                if shared is not None:
                    if len(_SHARED_ANSWERS) >= _SHARED_ANSWERS_LIMIT:
                        _SHARED_ANSWERS.clear()
                    _SHARED_ANSWERS[shared] = answer
            self.answers[selector] = answer
        return answer


_SHARED_ANSWERS: dict[tuple[str, Any], bool] = {}  # (selector, what CEL sees of a device) -> answer
_SHARED_ANSWERS_LIMIT = 100_000


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    fault: str | None = None


@dataclass(frozen=True)
class ResourceSlice:
    name: str
    devices: tuple[Device, ...]
    fault: str | None = None


@dataclass(frozen=True)
class Request:
    name: str
    device_class: str
    selectors: tuple[str, ...]
    count: int
    all: bool
    admin_access: bool


@dataclass(frozen=True)
class Constraint:
    requests: tuple[str, ...]  # empty: every request of the claim
    match_attribute: str


@dataclass(frozen=True)
class AllocationResult:
    request: str
    device: DeviceId
    admin_access: bool


@dataclass(frozen=True)
class ResourceClaim:
    namespace: str
    name: str
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...]
    allocated_node: str | None = None  # the node of an existing allocation ("" for node-independent)
    results: tuple[AllocationResult, ...] = ()
    fault: str | None = None
    reserved_for: tuple[str, ...] = ()  # names of the pods status.reservedFor lists

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def allocated(self) -> bool:
        return self.allocated_node is not None


# --- parsing -------------------------------------------------------------------------------


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, _, short = name.rpartition("/")
    return (domain or driver, short)


def _attribute_value(raw: Any) -> Any:
    if isinstance(raw, Mapping):
        for kind in ("int", "bool", "string", "version"):
            if kind in raw:
                return raw[kind]
    raise InputError("", f"attribute value {raw!r} has none of int, bool, string, version")


def _selectors(raw: Any, where: str) -> tuple[tuple[str, ...], str | None]:
    """The selectors' expressions, and a fault if one does not compile."""
    out: list[str] = []
    for i, selector in enumerate(raw or []):
        expression = str(((selector or {}).get("cel") or {}).get("expression", ""))
        try:
            compile_selector(expression)
        except SelectorError as error:
            return tuple(out), f"{where}.selectors[{i}].cel.expression: {error}"
        out.append(expression)
    return tuple(out), None


def parse_device_class(obj: Mapping[str, Any]) -> DeviceClass:
    name = _name(obj)
    selectors, fault = _selectors((obj.get("spec") or {}).get("selectors"), f"DeviceClass {name}: spec")
    return DeviceClass(name, selectors, fault)


def parse_slice(obj: Mapping[str, Any]) -> ResourceSlice:
    name = _name(obj)
    spec = obj.get("spec") or {}
    driver = str(spec.get("driver", ""))
    pool = str((spec.get("pool") or {}).get("name", ""))
    node = None if spec.get("allNodes") else str(spec.get("nodeName", ""))
    devices: list[Device] = []
    seen: set[str] = set()
    for i, raw in enumerate(spec.get("devices") or []):
        dname = str(raw.get("name", ""))
        if dname in seen:
            return ResourceSlice(name, (), f"ResourceSlice {name}: spec.devices[{i}].name: duplicate device {dname!r}")
        seen.add(dname)
        try:
            attributes: dict[str, dict[str, Any]] = {}
            for key, value in (raw.get("attributes") or {}).items():
                domain, short = _qualified(key, driver)
                attributes.setdefault(domain, {})[short] = _attribute_value(value)
            capacity: dict[str, dict[str, int]] = {}
            for key, value in (raw.get("capacity") or {}).items():
                domain, short = _qualified(key, driver)
                amount = parse_quantity((value or {}).get("value", 0))
                capacity.setdefault(domain, {})[short] = int(amount.to_integral_value(rounding=ROUND_CEILING))
        except InputError as error:
            return ResourceSlice(name, (), f"ResourceSlice {name}: spec.devices[{i}] ({dname}): {error.message}")
        flat = {f"{domain}/{short}": v for domain, values in attributes.items() for short, v in values.items()}
        cel_view = (driver, tuple(sorted(flat.items())),
                tuple(sorted((domain, tuple(sorted(values.items()))) for domain, values in capacity.items())))
        devices.append(Device(driver, pool, dname, node, flat, device_activation(driver, attributes, capacity),
                              seen_by_cel=cel_view))
    return ResourceSlice(name, tuple(devices))


def parse_claim(obj: Mapping[str, Any]) -> ResourceClaim:
    meta = obj.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "default")), str(meta.get("name", ""))
    where = f"ResourceClaim {namespace}/{name}"
    devices = (obj.get("spec") or {}).get("devices") or {}
    requests: list[Request] = []
    fault: str | None = None
    for i, raw in enumerate(devices.get("requests") or []):
        exactly = raw.get("exactly")
        if not isinstance(exactly, Mapping):
            fault = fault or f"{where}: spec.devices.requests[{i}]: only `exactly` requests are supported"
            continue
        selectors, bad = _selectors(exactly.get("selectors"), f"{where}: spec.devices.requests[{i}].exactly")
        fault = fault or bad
        mode = exactly.get("allocationMode", "ExactCount")
        requests.append(Request(
            name=str(raw.get("name", "")),
            device_class=str(exactly.get("deviceClassName", "")),
            selectors=selectors,
            count=int(exactly.get("count", 1)) if mode == "ExactCount" else 0,
            all=mode == "All",
            admin_access=bool(exactly.get("adminAccess", False)),
        ))
    constraints = tuple(
        Constraint(tuple(c.get("requests") or ()), str(c.get("matchAttribute", "")))
        for c in devices.get("constraints") or [] if c.get("matchAttribute")
    )
    allocation = (obj.get("status") or {}).get("allocation")
    node: str | None = None
    results: tuple[AllocationResult, ...] = ()
    if allocation:
        node = _allocation_node(allocation.get("nodeSelector"))
        results = tuple(
            AllocationResult(str(r.get("request", "")), (str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", ""))),
                             bool(r.get("adminAccess", False)))
            for r in (allocation.get("devices") or {}).get("results") or []
        )
    reserved = tuple(str(r.get("name", "")) for r in (obj.get("status") or {}).get("reservedFor") or []
                     if r.get("resource") == "pods")
    return ResourceClaim(namespace, name, tuple(requests), constraints, node, results, fault, reserved)


def _allocation_node(selector: Any) -> str:
    """The node an allocation's nodeSelector pins, as this allocator writes it ("" when none)."""
    for term in (selector or {}).get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and f.get("values"):
                return str(f["values"][0])
    return ""


def allocation_status(node: str, results: Iterable[AllocationResult]) -> dict[str, Any]:
    """The claim's `status.allocation` for results on a node."""
    return {
        "devices": {"results": [
            {"request": r.request, "driver": r.device[0], "pool": r.device[1], "device": r.device[2],
             **({"adminAccess": True} if r.admin_access else {})}
            for r in results
        ]},
        "nodeSelector": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]},
    }


@dataclass(frozen=True)
class DeviceClaimWrite:
    """What a pod's bind writes first for one of its claims (kube-scheduler's DynamicResources
    PreBind): the allocation chosen on `node`, when this session allocated the claim, and the
    pod's entry in `status.reservedFor` in any case. Empty `results`: the claim was already
    allocated (shared, or allocated before), so the pod is only added to `reservedFor`."""

    claim: str  # "<namespace>/<name>"
    node: str
    results: tuple[AllocationResult, ...] = ()


# --- allocation ------------------------------------------------------------------------------


class Unallocatable(Exception):
    """The claims cannot be allocated on the node; the message says which claim and request."""


def node_devices(slices: Iterable[ResourceSlice], node: str) -> list[Device]:
    return [d for s in slices for d in s.devices if d.node is None or d.node == node]


def device_numa(device: Device, by_uuid: Mapping[str, int] | None = None) -> int | None:
    """The NUMA node a device's slice gives it (attribute `numa` or `numaNode` of any domain),
    else the one `by_uuid` (the node agent's report: GPU UUID -> NUMA node) gives its `uuid`."""
    uuid = None
    for key, value in device.attributes.items():
        short = key.rpartition("/")[2]
        if short in ("numa", "numaNode") and isinstance(value, int) and not isinstance(value, bool):
            return value
        if short == "uuid":
            uuid = value
    return by_uuid.get(str(uuid)) if by_uuid and uuid is not None else None


def allocate(claims: Iterable[ResourceClaim], node: str, devices: list[Device],
             classes: Mapping[str, DeviceClass], taken: set[DeviceId],
             prefer: Callable[[Device], bool] | None = None) -> dict[str, tuple[AllocationResult, ...]]:
    """Allocations for the pod's unallocated claims on the node (claim key -> results); raises
    Unallocatable with the reason. `taken` is not changed: the caller marks the chosen devices.
    Devices `prefer` answers True for are tried first (the search still takes others when the
    preferred ones cannot satisfy a request or constraint)."""
    out: dict[str, tuple[AllocationResult, ...]] = {}
    used = set(taken)
    for claim in claims:
        if claim.fault:
            raise Unallocatable(claim.fault)
        if claim.allocated:
            if claim.allocated_node not in ("", node):
                raise Unallocatable(f"resourceclaim {claim.key} is allocated on another node")
            continue
        results = _allocate_claim(claim, devices, classes, used, prefer)
        used.update(r.device for r in results if not r.admin_access)
        out[claim.key] = results
    return out


def _candidates(claim: ResourceClaim, request: Request, devices: list[Device],
                classes: Mapping[str, DeviceClass]) -> list[Device]:
    device_class = classes.get(request.device_class)
    if device_class is None:
        raise Unallocatable(f"resourceclaim {claim.key}: request {request.name}: deviceclass {request.device_class!r} not found")
    if device_class.fault:
        raise Unallocatable(device_class.fault)
    selectors = device_class.selectors + request.selectors
    return [d for d in devices if all(d.passes(s) for s in selectors)]


def _allocate_claim(claim: ResourceClaim, devices: list[Device], classes: Mapping[str, DeviceClass],
                    used: set[DeviceId], prefer: Callable[[Device], bool] | None) -> tuple[AllocationResult, ...]:
    slots: list[tuple[Request, list[Device]]] = []  # one entry per device to choose
    for request in claim.requests:
        found = _candidates(claim, request, devices, classes)
        if request.all:
            if not found or (not request.admin_access and any(d.id in used for d in found)):
                raise Unallocatable(f"resourceclaim {claim.key}: request {request.name}: "
                                    f"allocationMode All needs every matching device free")
            slots.extend((request, [d]) for d in found)
            continue
        free = found if request.admin_access else [d for d in found if d.id not in used]
        if prefer is not None:
            free = sorted(free, key=lambda d: not prefer(d))  # stable: preferred first, else as listed
        if len(free) < request.count:
            raise Unallocatable(f"resourceclaim {claim.key}: request {request.name}: needs {request.count} "
                                f"device(s) of class {request.device_class}, {len(free)} free")
        slots.extend((request, free) for _ in range(request.count))
    chosen: list[Device] = []
    budget = [_SEARCH_LIMIT]

    def fits(device: Device, request: Request) -> bool:
        for constraint in claim.constraints:
            if constraint.requests and request.name not in constraint.requests:
                continue
            value = device.attributes.get(constraint.match_attribute, _MISSING)
            if value is _MISSING:
                return False
            for other, (other_request, _) in zip(chosen, slots):
                if (not constraint.requests or other_request.name in constraint.requests) and \
                        other.attributes.get(constraint.match_attribute) != value:
                    return False
        return True

    picked: list[int] = []  # index into its options of each chosen device

    def search(i: int) -> bool:
        if i == len(slots):
            return True
        request, options = slots[i]
        # the devices of one request are chosen in option order, so no set is tried twice
        start = picked[-1] + 1 if i and slots[i - 1][0] is request and not request.all else 0
        for index in range(start, len(options)):
            device = options[index]
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if any(c.id == device.id for c in chosen) or not fits(device, request):
                continue
            chosen.append(device)
            picked.append(index)
            if search(i + 1):
                return True
            chosen.pop()
            picked.pop()
        return False

    if not search(0):
        names = ", ".join(c.match_attribute for c in claim.constraints)
        raise Unallocatable(f"resourceclaim {claim.key}: no devices satisfy constraint(s) {names}")
    return tuple(AllocationResult(r.name, d.id, r.admin_access) for d, (r, _) in zip(chosen, slots))


_MISSING = object()
