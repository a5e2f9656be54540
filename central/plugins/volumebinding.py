"""A pod's claims as kube-scheduler's VolumeBinding, VolumeZone and NodeVolumeLimits see them.

Filter (per node row, vectorised where it can be):
- a claim that does not exist or is being deleted, or an unbound claim of an Immediate class
  (the PV controller binds those, not the scheduler), rules out every node;
- a bound claim's volume must reach the node (its required node affinity) and lie in the
  node's zone (its topology labels);
- an unbound WaitForFirstConsumer claim needs, on the node, either a free volume that matches
  it (class, size, access and volume modes, selector, node affinity) or dynamic provisioning
  there (a provisioner other than kubernetes.io/no-provisioner, no selector on the claim, the
  node within the class's allowedTopologies); a claim already given a node
  (`volume.kubernetes.io/selected-node`) is being provisioned there, so only that node fits;
- a node whose CSI driver (CSINode `allocatable.count`) or in-tree disk type
  (`attachable-volumes-*` allocatable) would attach more volumes than its limit is full.

Choice (on allocate): each unbound claim takes the smallest free matching volume that reaches
the node (one pre-bound to the claim first), or provisioning on the node. The choice is the
session's: later pods see the volume taken and the claim as bound (or pinned to the node), a
discarded statement gives it back, so a gang whose volumes cannot all be met places nothing.
The bound pods' choices go to the sink, which writes them before the Binding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework.status import Check, Code
from central.model.objects import TERMINATED_STATUSES, TaskInfo, TaskStatus
from central.model.volumes import NO_PROVISIONER, ZONE_LABELS, Claim, ClaimBinding, Volume

if TYPE_CHECKING:
    from central.framework.handle import Handle

# kube-scheduler's reasons, word for word (the unbound-volume one names the claim: which of a
# pod's claims cannot be met is what a person needs to know)
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
ZONE_CONFLICT = "node(s) had no available volume zone"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
MAX_VOLUMES = "node(s) exceed max volume count"

AttachId = tuple[str, str]  # (CSI driver or in-tree allocatable key, volume id)


class VolumeBinder:
    def __init__(self, handle: Handle, binding: bool = True, zone: bool = True, limits: bool = True):
        self.handle = handle
        self.store = handle.volumes
        self.index = handle.node_index
        self.binding, self.zone, self.limits = binding, zone, limits
        self.names = self.index.label("metadata.name")
        self._reach: dict[str, np.ndarray] = {}  # volume -> rows its node affinity allows
        self._zones: dict[str, np.ndarray] = {}  # volume -> rows in its zones
        self._topology: dict[str, np.ndarray] = {}  # class -> rows it may provision on
        self._by_class: dict[str, list[Volume]] | None = None
        self.chosen: dict[str, tuple[ClaimBinding, set[str]]] = {}  # claim -> this session's binding, pods using it
        self.taken: dict[str, str] = {}  # volume -> the claim it was chosen for this session
        self._attached: dict[str, dict[AttachId, int]] | None = None  # node -> volume -> pods there using it
        self._counted: dict[str, str] = {}  # pod -> the node its volumes are counted on

    def wants(self, task: TaskInfo) -> bool:
        return bool(task.claims) and self.store.tracked and (self.binding or self.zone or self.limits)

    # --- filter ---------------------------------------------------------------------------

    def checks(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        n = len(rows)
        none = np.zeros(n, dtype=bool)
        reach, zone, pinned = np.ones(n, dtype=bool), np.ones(n, dtype=bool), np.ones(n, dtype=bool)
        to_find: list[Claim] = []
        for name in task.claims:
            claim = self.store.claims.get(f"{task.namespace}/{name}")
            if claim is None:
                return [Check(none, f'persistentvolumeclaim "{name}" not found')]
            if claim.deleting:
                return [Check(none, f'persistentvolumeclaim "{name}" is being deleted')]
            volume_name = claim.volume_name or self._chosen_volume(claim)
            if volume_name:
                volume = self.store.volumes.get(volume_name)
                if volume is None:
                    return [Check(none, f'persistentvolume "{volume_name}" of claim "{name}" not found')]
                if self.binding:
                    reach &= self._reaches(volume)[rows]
                if self.zone:
                    zone &= self._in_zone(volume)[rows]
            elif not self.binding:
                continue
            elif claim.key in self.chosen or claim.selected_node:  # being provisioned on that node
                node = self.chosen[claim.key][0].node if claim.key in self.chosen else claim.selected_node
                pinned &= self.names[rows] == node
            elif not self.store.delayed(claim):
                return [Check(none, UNBOUND_IMMEDIATE)]
            else:
                to_find.append(claim)
        checks = [Check(reach, NODE_CONFLICT), Check(zone, ZONE_CONFLICT), Check(pinned, BIND_CONFLICT)]
        for claim in to_find:
            checks.append(Check(self._satisfiable(claim)[rows], f'{BIND_CONFLICT} for claim "{claim.name}"'))
        if len(to_find) > 1:  # the claims may compete for the same volumes on a node
            together = np.fromiter((self.choose(to_find, int(row)) is not None for row in rows), bool, n)
            checks.append(Check(together, BIND_CONFLICT))
        if self.limits:
            checks.extend(self._limit_checks(task, rows))
        return checks

    def _chosen_volume(self, claim: Claim) -> str:
        chosen = self.chosen.get(claim.key)
        return chosen[0].volume if chosen else ""

    def _reaches(self, volume: Volume) -> np.ndarray:
        mask = self._reach.get(volume.name)
        if mask is None:
            mask = np.ones(self.index.n, dtype=bool)
            if volume.node_terms:
                mask = np.zeros(self.index.n, dtype=bool)
                for term in volume.node_terms:
                    if term.requirements:  # an empty term matches nothing
                        mask |= self.index.matches(term)
            self._reach[volume.name] = mask
        return mask

    def _in_zone(self, volume: Volume) -> np.ndarray:
        """VolumeZone: a node with zone or region labels must carry one of the volume's values
        for each such label the volume has."""
        mask = self._zones.get(volume.name)
        if mask is None:
            mask = np.ones(self.index.n, dtype=bool)
            labelled = np.zeros(self.index.n, dtype=bool)
            for key in ZONE_LABELS:
                labelled |= self.index.label(key) != None  # noqa: E711 (elementwise over an object array)
            for key in ZONE_LABELS:
                if key in volume.labels:
                    allowed = set(volume.labels[key].split("__"))
                    mask &= np.fromiter((v in allowed for v in self.index.label(key)), bool, self.index.n)
            mask |= ~labelled
            self._zones[volume.name] = mask
        return mask

    def _provisionable(self, claim: Claim) -> np.ndarray:
        mask = self._topology.get(claim.storage_class)
        if mask is None:
            sc = self.store.classes.get(claim.storage_class)
            if sc is None or sc.provisioner in ("", NO_PROVISIONER):
                mask = np.zeros(self.index.n, dtype=bool)
            elif not sc.allowed_topologies:
                mask = np.ones(self.index.n, dtype=bool)
            else:
                mask = np.zeros(self.index.n, dtype=bool)
                for term in sc.allowed_topologies:
                    mask |= self.index.matches(term)
            self._topology[claim.storage_class] = mask
        return mask if claim.selector is None else np.zeros(self.index.n, dtype=bool)  # no provisioning by selector

    def candidates(self, claim: Claim) -> list[Volume]:
        """Free volumes that match the claim, in the order kube takes them: pre-bound to the
        claim first, then the smallest, then by name."""
        if self._by_class is None:
            self._by_class = {}
            for volume in self.store.volumes.values():
                self._by_class.setdefault(volume.storage_class, []).append(volume)
        found = [v for v in self._by_class.get(claim.storage_class, ())
                 if v.matches(claim) and v.free_for(claim) and self.taken.get(v.name, claim.key) == claim.key]
        return sorted(found, key=lambda v: (v.claim != claim.key, v.capacity, v.name))

    def _satisfiable(self, claim: Claim) -> np.ndarray:
        mask = self._provisionable(claim).copy()
        for volume in self.candidates(claim):
            mask |= self._reaches(volume)
        return mask

    def choose(self, claims: list[Claim], row: int) -> tuple[ClaimBinding, ...] | None:
        """Each claim's volume (or provisioning) on the node at `row`; None if one cannot be met."""
        node = str(self.names[row])
        used: set[str] = set()
        out = []
        for claim in claims:
            volume = next((v for v in self.candidates(claim) if v.name not in used and self._reaches(v)[row]), None)
            if volume is not None:
                used.add(volume.name)
                out.append(ClaimBinding(claim.key, volume.name, node))
            elif self._provisionable(claim)[row]:
                out.append(ClaimBinding(claim.key, "", node))
            else:
                return None
        return tuple(out)

    # --- attach limits ----------------------------------------------------------------------

    def _attach_ids(self, task: TaskInfo) -> set[AttachId]:
        ids = set()
        for name in task.claims:
            claim = self.store.claims.get(f"{task.namespace}/{name}")
            if claim is None:
                continue
            volume = self.store.volumes.get(claim.volume_name or self._chosen_volume(claim))
            if volume is not None and volume.attach is not None:
                ids.add(volume.attach)
            elif volume is None:  # to be provisioned: counted against its provisioner, as kube does
                sc = self.store.classes.get(claim.storage_class)
                if sc is not None and sc.provisioner:
                    ids.add((sc.provisioner, f"claim {claim.key}"))
        return ids

    def _limit(self, row: int, driver: str) -> int | None:
        name = self.handle.nodes[row].name
        limit = self.store.attach_limits.get(name, {}).get(driver)
        return self.store.in_tree_limits.get(name, {}).get(driver) if limit is None else limit

    def _limit_checks(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        wanted = self._attach_ids(task)
        drivers = {driver for driver, _ in wanted}
        if not drivers or not (self.store.attach_limits or self.store.in_tree_limits):
            return []
        attached = self._attached_by_node()
        ok = np.ones(len(rows), dtype=bool)
        for i, row in enumerate(rows):
            on_node = attached.get(self.handle.nodes[int(row)].name, {})
            for driver in drivers:
                limit = self._limit(int(row), driver)
                if limit is not None:
                    used = {v for v in on_node if v[0] == driver}
                    if len(used | {v for v in wanted if v[0] == driver}) > limit:
                        ok[i] = False
        return [Check(ok, MAX_VOLUMES, Code.UNSCHEDULABLE)]

    def _attached_by_node(self) -> dict[str, dict[AttachId, int]]:
        if self._attached is None:
            self._attached = {}
            for task in self.handle.tasks.values():
                if task.claims and task.node and task.status not in TERMINATED_STATUSES:
                    self._count(task, task.node, +1)
        return self._attached

    def _count(self, task: TaskInfo, node: str, sign: int) -> None:
        assert self._attached is not None
        if sign > 0:
            self._counted[task.uid] = node
        elif self._counted.pop(task.uid, None) is None:
            return
        on_node = self._attached.setdefault(node, {})
        for volume in self._attach_ids(task):
            on_node[volume] = on_node.get(volume, 0) + sign
            if on_node[volume] <= 0:
                del on_node[volume]

    # --- the session's choices --------------------------------------------------------------

    def allocated(self, task: TaskInfo) -> None:
        """The pod is placed: its unbound claims take their volumes (or provisioning) there."""
        if task.node is None:
            return
        unbound, shared = [], []
        for name in task.claims:
            claim = self.store.claims.get(f"{task.namespace}/{name}")
            if claim is None or claim.volume_name or claim.selected_node:
                continue
            if claim.key in self.chosen:
                shared.append(claim.key)
            elif self.binding and self.store.delayed(claim):
                unbound.append(claim)
        bindings = self.choose(unbound, self.handle.nodes_by_name[task.node].index) if unbound else ()
        if bindings is None:  # refused whole, before anything is recorded
            raise InputError(f"Pod {task.uid}", f"its claims cannot all be bound on node {task.node}")
        for key in shared:
            self.chosen[key][1].add(task.uid)
        for b in bindings:
            self.chosen[b.claim] = (b, {task.uid})
            if b.volume:
                self.taken[b.volume] = b.claim
        mine = tuple(self.chosen[key][0] for key in (f"{task.namespace}/{n}" for n in task.claims) if key in self.chosen)
        if mine:
            self.handle.bind_claims(task, mine)  # every pod of a shared claim writes it: the write is idempotent
        if self._attached is not None and task.uid not in self._counted:
            self._count(task, task.node, +1)

    def deallocated(self, task: TaskInfo) -> None:
        """Undone (back to pending): the claims this pod alone held are free again. An
        evicted pod keeps its volumes attached until it is gone."""
        if task.status == TaskStatus.RELEASING:
            return
        if self._attached is not None and task.uid in self._counted:
            self._count(task, self._counted[task.uid], -1)
        for key in [f"{task.namespace}/{n}" for n in task.claims]:
            chosen = self.chosen.get(key)
            if chosen is not None:
                chosen[1].discard(task.uid)
                if not chosen[1]:
                    del self.chosen[key]
                    if chosen[0].volume:
                        self.taken.pop(chosen[0].volume, None)
        self.handle.bind_claims(task, ())
