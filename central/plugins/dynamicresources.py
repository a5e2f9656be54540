"""A pod's ResourceClaims as kube-scheduler's DynamicResources plugin sees them.

Filter: a node fits when the structured allocator (central/model/dra.py) can allocate every
claim of the pod there, from the node's ResourceSlices, with devices held by allocated claims
and by the claims this session chose taken. A claim already allocated pins the pod to its node.

Choice (on allocate): the pod's unallocated claims take the devices the filter found on its node;
a claim shared by several pods is allocated once and the later pods follow it. The choice is the
session's: a discarded statement gives the devices back, so a gang whose claims cannot all be
allocated places nothing. A victim's claims that reserve only that pod free their devices.

Bind (PreBind): each placed pod hands the sink a `DeviceClaimWrite` per claim, so its bind
writes the allocation (claims this session allocated) and its `reservedFor` entry before the
Binding; a discarded statement withdraws them with the placement.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from central.framework.status import Check
from central.model.dra import (
    AllocationResult,
    DeviceClaimWrite,
    DeviceId,
    ResourceClaim,
    Unallocatable,
    allocate,
    node_devices,
)
from central.model.drastore import MissingClaim
from central.model.objects import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle


class DeviceAllocator:
    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.store = handle.dra
        self.names = handle.node_index.label("metadata.name")
        # claim -> (node, results, pods using it) chosen in this session
        self.chosen: dict[str, tuple[str, tuple[AllocationResult, ...], set[str]]] = {}
        self.freed: set[str] = set()  # allocated claims whose only pod was evicted this session

    @staticmethod
    def wants(task: TaskInfo) -> bool:
        return bool(task.device_claims)

    def _claims(self, task: TaskInfo) -> list[ResourceClaim]:
        claims = self.store.task_claims(task.namespace, task.name, task.device_claims)
        out = []
        for claim in claims:
            chosen = self.chosen.get(claim.key)
            if chosen is not None:  # allocated in this session: later pods follow it
                claim = dataclasses.replace(claim, allocated_node=chosen[0], results=chosen[1])
            out.append(claim)
        return out

    def _taken(self) -> set[DeviceId]:
        taken = self.store.taken
        for key in self.freed:
            taken.difference_update(r.device for r in self.store.claims[key].results)
        for _, results, _ in self.chosen.values():
            taken.update(r.device for r in results if not r.admin_access)
        return taken

    def _allocation(self, task: TaskInfo, node: str) -> dict[str, tuple[AllocationResult, ...]]:
        devices = node_devices(self.store.slices.values(), node)
        return allocate(self._claims(task), node, devices, self.store.classes, self._taken())

    def checks(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        try:
            self._claims(task)
        except MissingClaim as missing:
            return [Check(np.zeros(len(rows), dtype=bool), str(missing))]
        fits = np.zeros(len(rows), dtype=bool)
        reasons: dict[str, int] = {}
        for i, row in enumerate(rows):
            try:
                self._allocation(task, str(self.names[row]))
                fits[i] = True
            except Unallocatable as why:
                reasons[str(why)] = reasons.get(str(why), 0) + 1
        # one reason per check: the commonest, which names the claim and request a person must fix
        reason = max(reasons, key=lambda r: reasons[r]) if reasons else ""
        return [Check(fits, f"node(s) cannot allocate the pod's resource claims: {reason}")]

    def allocated(self, task: TaskInfo) -> None:
        if task.node is None:
            return
        try:
            got = self._allocation(task, task.node)
        except (MissingClaim, Unallocatable):
            return  # placed by an action that checked no predicates (an already bound pod)
        writes = []
        for claim in self._claims(task):
            if claim.key in self.chosen:  # another pod of this session allocated it: same allocation
                self.chosen[claim.key][2].add(task.uid)
                writes.append(DeviceClaimWrite(claim.key, task.node, self.chosen[claim.key][1]))
            elif claim.key in got:
                self.chosen[claim.key] = (task.node, got[claim.key], {task.uid})
                writes.append(DeviceClaimWrite(claim.key, task.node, got[claim.key]))
            else:  # allocated before this session: the pod is only added to reservedFor
                writes.append(DeviceClaimWrite(claim.key, task.node))
        self.handle.reserve_device_claims(task, tuple(writes))

    def deallocated(self, task: TaskInfo) -> None:
        self.handle.reserve_device_claims(task, ())
        for _, name in task.device_claims:
            key = f"{task.namespace}/{name}"
            chosen = self.chosen.get(key)
            if chosen is not None:
                chosen[2].discard(task.uid)
                if not chosen[2]:
                    del self.chosen[key]
            elif task.status == TaskStatus.RELEASING:
                claim = self.store.claims.get(key)
                if claim is not None and claim.allocated and claim.reserved_for == (task.name,):
                    self.freed.add(key)

    def allocation_of(self, task: TaskInfo) -> dict[str, tuple[str, tuple[AllocationResult, ...]]]:
        """The claims this session allocated that the placed pod uses: what the bind writes first."""
        return {key: (node, results) for key, (node, results, pods) in self.chosen.items() if task.uid in pods}
