"""Storage as the scheduler needs it: claims, volumes, storage classes and CSI node limits.

kube-scheduler's VolumeBinding, VolumeZone and NodeVolumeLimits read these four kinds; the
cache keeps them parsed here (`VolumeStore`), one object at a time, like everything else.

- **PersistentVolumeClaim** (`Claim`): its class, the volume it is bound to, what it asks for
  (size, access modes, volume mode, a label selector) and the node chosen for it
  (`volume.kubernetes.io/selected-node`, set for WaitForFirstConsumer provisioning).
- **PersistentVolume** (`Volume`): its class, size, modes, the claim it is (pre-)bound to,
  the nodes it can reach (required node affinity), zone labels, and what counts against a
  node's attach limit (a CSI driver, or an in-tree disk type).
- **StorageClass** (`StorageClassInfo`): provisioner, binding mode, allowed topologies.
- **CSINode**: per driver, how many volumes the node can attach (`allocatable.count`).

`VolumeStore.tracked` says whether the feed carries these kinds at all: the Kubernetes adapter
always does, so there a claim that is missing is a claim that does not exist (kube-scheduler
then refuses the pod); `caldera simulate` tracks them only when its manifests hold some.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from central.errors import InputError
from central.model.fields import integer, metadata, str_map, typed
from central.model.objects import LabelRequirement, Selector
from central.model.podspec import node_term, selector
from central.resources.quantity import parse_quantity

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
# the labels VolumeZone matches between a bound volume and a node (a value may list several, "a__b")
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
               "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")
# in-tree disk types and the node allocatable that limits how many a node attaches
IN_TREE_LIMITS = {"awsElasticBlockStore": ("attachable-volumes-aws-ebs", "volumeID"),
                  "gcePersistentDisk": ("attachable-volumes-gce-pd", "pdName"),
                  "azureDisk": ("attachable-volumes-azure-disk", "diskName"),
                  "cinder": ("attachable-volumes-cinder", "volumeID")}


@dataclass(frozen=True)
class Claim:
    key: str  # "<namespace>/<name>"
    uid: str
    storage_class: str  # "" for none
    volume_name: str  # the volume it is bound to (binding in progress counts, as in kube); "" while unbound
    request: int  # bytes
    access_modes: frozenset[str]
    volume_mode: str
    selector: Selector | None
    selected_node: str  # "" unless a node was chosen for provisioning
    deleting: bool

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]


@dataclass(frozen=True)
class Volume:
    name: str
    storage_class: str
    capacity: int  # bytes
    access_modes: frozenset[str]
    volume_mode: str
    claim: str  # "<namespace>/<name>" of spec.claimRef; "" when unclaimed
    claim_uid: str
    node_terms: tuple[Selector, ...]  # ORed; empty: every node
    labels: Mapping[str, str]
    phase: str
    deleting: bool
    attach: tuple[str, str] | None  # (CSI driver or in-tree allocatable key, volume id) counted against limits

    def free_for(self, claim: Claim) -> bool:
        """Unclaimed, or pre-bound to `claim` (by name, and by uid where the PV names one)."""
        if not self.claim:
            return self.phase in ("", "Pending", "Available")
        return self.claim == claim.key and self.claim_uid in ("", claim.uid)

    def matches(self, claim: Claim) -> bool:
        """kube's FindMatchingVolume test apart from nodes: class, modes, size, selector."""
        return (not self.deleting and self.storage_class == claim.storage_class
                and self.volume_mode == claim.volume_mode and claim.access_modes <= self.access_modes
                and self.capacity >= claim.request
                and (claim.selector is None or claim.selector.matches(dict(self.labels))))


@dataclass(frozen=True)
class ClaimBinding:
    """What a pod's bind writes first for one of its claims (kube-scheduler's PreBind): the
    volume chosen for it (its claimRef set to the claim), or, with no volume, the node chosen
    for dynamic provisioning (the claim's selected-node annotation)."""

    claim: str  # "<namespace>/<name>"
    volume: str  # "" for provisioning
    node: str


@dataclass(frozen=True)
class StorageClassInfo:
    name: str
    provisioner: str
    wait_for_first_consumer: bool
    allowed_topologies: tuple[Selector, ...]  # ORed; empty: everywhere


@dataclass
class VolumeStore:
    claims: dict[str, Claim] = field(default_factory=dict)
    volumes: dict[str, Volume] = field(default_factory=dict)
    classes: dict[str, StorageClassInfo] = field(default_factory=dict)
    attach_limits: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> CSI driver -> count
    in_tree_limits: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> attachable-volumes-* -> count
    tracked: bool = False  # whether the feed carries storage objects (see the module doc)

    def apply(self, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        self.tracked = True
        if kind == "PersistentVolumeClaim":
            claim = parse_claim(obj)
            self.claims[claim.key] = claim
        elif kind == "PersistentVolume":
            volume = parse_volume(obj)
            self.volumes[volume.name] = volume
        elif kind == "StorageClass":
            sc = parse_storage_class(obj)
            self.classes[sc.name] = sc
        else:
            node, limits = parse_csinode(obj)
            self.attach_limits[node] = limits

    def delete(self, kind: str, key: str) -> None:
        tables: dict[str, dict[str, Any]] = {"PersistentVolumeClaim": self.claims, "PersistentVolume": self.volumes,
                                             "StorageClass": self.classes, "CSINode": self.attach_limits}
        table = tables[kind]
        table.pop(key, None)

    def delayed(self, claim: Claim) -> bool:
        """Binding waits for the first pod (WaitForFirstConsumer); a claim without a class binds at once."""
        sc = self.classes.get(claim.storage_class) if claim.storage_class else None
        return sc is not None and sc.wait_for_first_consumer


VOLUME_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode")


def _bytes(value: Any, where: str) -> int:
    if value is None:
        return 0
    try:
        return int(parse_quantity(value))
    except InputError as err:
        raise err.within(where) from None


def _class_of(obj: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    beta = str_map(obj, "metadata.annotations").get(BETA_CLASS)
    return str(beta if beta is not None else spec.get("storageClassName") or "")


def parse_claim(obj: Mapping[str, Any]) -> Claim:
    namespace, name = metadata(obj, namespaced=True)
    meta = obj["metadata"]
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    raw_selector = spec.get("selector")
    requests = typed((spec.get("resources") or {}).get("requests") or {}, Mapping, "spec.resources.requests")
    return Claim(
        key=f"{namespace}/{name}", uid=str(meta.get("uid") or ""),
        storage_class=_class_of(obj, spec), volume_name=str(spec.get("volumeName") or ""),
        request=_bytes(requests.get("storage"), "spec.resources.requests.storage"),
        access_modes=frozenset(str(m) for m in typed(spec.get("accessModes") or [], list, "spec.accessModes")),
        volume_mode=str(spec.get("volumeMode") or "Filesystem"),
        selector=selector(raw_selector, "spec.selector") if raw_selector else None,
        selected_node=str_map(obj, "metadata.annotations").get(SELECTED_NODE, ""),
        deleting=bool(meta.get("deletionTimestamp")))


def parse_volume(obj: Mapping[str, Any]) -> Volume:
    _, name = metadata(obj, namespaced=False)
    meta = obj["metadata"]
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    ref = typed(spec.get("claimRef") or {}, Mapping, "spec.claimRef")
    required = typed(((spec.get("nodeAffinity") or {}).get("required") or {}), Mapping, "spec.nodeAffinity.required")
    terms = tuple(node_term(t, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]")
                  for i, t in enumerate(typed(required.get("nodeSelectorTerms") or [], list,
                                              "spec.nodeAffinity.required.nodeSelectorTerms")))
    attach: tuple[str, str] | None = None
    csi = spec.get("csi")
    if isinstance(csi, Mapping) and csi.get("driver"):
        attach = (str(csi["driver"]), str(csi.get("volumeHandle") or name))
    for source, (limit_key, id_field) in IN_TREE_LIMITS.items():
        if isinstance(spec.get(source), Mapping):
            attach = (limit_key, str(spec[source].get(id_field) or name))
    return Volume(
        name=name, storage_class=_class_of(obj, spec),
        capacity=_bytes((spec.get("capacity") or {}).get("storage"), "spec.capacity.storage"),
        access_modes=frozenset(str(m) for m in typed(spec.get("accessModes") or [], list, "spec.accessModes")),
        volume_mode=str(spec.get("volumeMode") or "Filesystem"),
        claim=f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("name") else "",
        claim_uid=str(ref.get("uid") or ""), node_terms=terms, labels=str_map(obj, "metadata.labels"),
        phase=str((obj.get("status") or {}).get("phase") or ""), deleting=bool(meta.get("deletionTimestamp")),
        attach=attach)


def parse_storage_class(obj: Mapping[str, Any]) -> StorageClassInfo:
    _, name = metadata(obj, namespaced=False)
    mode = obj.get("volumeBindingMode") or "Immediate"
    if mode not in ("Immediate", WAIT_FOR_FIRST_CONSUMER):
        raise InputError("volumeBindingMode", f"unknown mode {mode!r}; valid: Immediate, WaitForFirstConsumer")
    terms = []
    for i, term in enumerate(typed(obj.get("allowedTopologies") or [], list, "allowedTopologies")):
        where = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = typed(typed(term, Mapping, f"allowedTopologies[{i}]").get("matchLabelExpressions") or [], list, where)
        terms.append(Selector(tuple(
            LabelRequirement(str(typed(e, Mapping, f"{where}[{j}]").get("key")), "In",
                             tuple(str(v) for v in typed(e.get("values") or [], list, f"{where}[{j}].values")))
            for j, e in enumerate(exprs))))
    return StorageClassInfo(name=name, provisioner=str(obj.get("provisioner") or ""),
                            wait_for_first_consumer=mode == WAIT_FOR_FIRST_CONSUMER, allowed_topologies=tuple(terms))


def parse_csinode(obj: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
    """The node (a CSINode is named after its node) and each driver's attach limit, where set."""
    _, name = metadata(obj, namespaced=False)
    limits = {}
    for i, driver in enumerate(typed((obj.get("spec") or {}).get("drivers") or [], list, "spec.drivers")):
        driver = typed(driver, Mapping, f"spec.drivers[{i}]")
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None and driver.get("name"):
            limits[str(driver["name"])] = integer(count, f"spec.drivers[{i}].allocatable.count", 0)
    return name, limits


def in_tree_limits(node: Mapping[str, Any]) -> dict[str, int]:
    """A Node's `attachable-volumes-*` allocatable: how many in-tree disks of each type it attaches."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    out = {}
    for key, value in allocatable.items() if isinstance(allocatable, Mapping) else ():
        if isinstance(key, str) and key.startswith("attachable-volumes-"):
            out[key] = int(parse_quantity(value))
    return out


def pod_claims(name: str, spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The claim names a pod's volumes use: PVCs by name, and a generic ephemeral volume's
    claim, which its controller names `<pod>-<volume>`."""
    out = []
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping) and pvc.get("claimName"):
            out.append(str(pvc["claimName"]))
        elif isinstance(volume.get("ephemeral"), Mapping) and volume.get("name"):
            out.append(f"{name}-{volume['name']}")
    return tuple(out)
