"""A pod's ResourceClaims as kube-scheduler's DynamicResources plugin sees them.

Filter: a node fits when the structured allocator (central/model/dra.py) can allocate every
claim of the pod there, from the node's ResourceSlices, with devices held by allocated claims
and by the claims this session chose taken. A claim already allocated pins the pod to its node.

Choice (on allocate): the pod's unallocated claims take the devices the filter found on its node;
a claim shared by several pods is allocated once and the later pods follow it. The choice is the
session's: a discarded statement gives the devices back, so a gang whose claims cannot all be
allocated places nothing. A victim's claims that reserve only that pod free their devices.

NUMA: when numa-aware gave the pod CPUs of some NUMA nodes (its `caldera.sh/numa-nodes`), the
pod's claims take devices of those NUMA nodes first (a device's `numa` attribute), so a GPU sits
next to the CPUs that feed it. The devices are therefore chosen when next needed (the next pod's
filter, an undo, the bind) rather than in the placement event itself, which may reach this
plugin before numa-aware has chosen the CPUs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework.status import Check
from central.model.dra import AllocationResult, Device, DeviceId, ResourceClaim, Unallocatable, allocate, device_numa
from central.model.drastore import MissingClaim
from central.model.fields import parse_index_list
from central.model.objects import TaskInfo, TaskStatus
from central.plugins.numaaware import NUMA_NODES

if TYPE_CHECKING:
    from central.framework.handle import Handle


class DeviceAllocator:
    def __init__(self, handle: Handle, prefer_numa: bool = True) -> None:
        self.handle = handle
        self.prefer_numa = prefer_numa
        self.store = handle.dra
        self.names = handle.node_index.label("metadata.name")
        # claim -> (node, results, pods using it) chosen in this session
        self.chosen: dict[str, tuple[str, tuple[AllocationResult, ...], set[str]]] = {}
        self.freed: set[str] = set()  # allocated claims whose only pod was evicted this session
        self.unsettled: dict[str, TaskInfo] = {}  # placed pods whose devices are not chosen yet, in order

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

    def _allocation(self, task: TaskInfo, node: str, prefer: Callable[[Device], bool] | None = None,
                    taken: set[DeviceId] | None = None) -> dict[str, tuple[AllocationResult, ...]]:
        return allocate(self._claims(task), node, self.store.devices_on(node), self.store.classes,
                        self._taken() if taken is None else taken, prefer)

    def _numa_preference(self, task: TaskInfo) -> Callable[[Device], bool] | None:
        """Devices on the NUMA nodes numa-aware gave the pod's CPUs; None when it gave none."""
        chosen = self.handle.annotation(task, NUMA_NODES) if self.prefer_numa else None
        if not chosen:
            return None
        try:
            cells = parse_index_list(chosen, f"Pod {task.uid}: {NUMA_NODES}", 1 << 16)
        except InputError:
            return None
        return lambda device: device_numa(device) in cells

    def settle(self) -> None:
        """Choose the devices of the pods placed since the last call, in placement order."""
        while self.unsettled:
            uid = next(iter(self.unsettled))
            task = self.unsettled.pop(uid)
            self._choose(task)

    def checks(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        self.settle()
        try:
            self._claims(task)
        except MissingClaim as missing:
            return [Check(np.zeros(len(rows), dtype=bool), str(missing))]
        fits = np.zeros(len(rows), dtype=bool)
        reasons: dict[str, int] = {}
        taken = self._taken()  # once per pod, not per node: the same for every node asked
        for i, row in enumerate(rows):
            try:
                self._allocation(task, str(self.names[row]), taken=taken)
                fits[i] = True
            except Unallocatable as why:
                reasons[str(why)] = reasons.get(str(why), 0) + 1
        # one reason per check: the commonest, which names the claim and request a person must fix
        reason = max(reasons, key=lambda r: reasons[r]) if reasons else ""
        return [Check(fits, f"node(s) cannot allocate the pod's resource claims: {reason}")]

    def allocated(self, task: TaskInfo) -> None:
        if task.node is not None:
            self.unsettled[task.uid] = task

    def _choose(self, task: TaskInfo) -> None:
        assert task.node is not None
        try:
            got = self._allocation(task, task.node, self._numa_preference(task))
        except (MissingClaim, Unallocatable):
            return  # placed by an action that checked no predicates (an already bound pod)
        for claim in self._claims(task):
            if claim.key in self.chosen:
                self.chosen[claim.key][2].add(task.uid)
            elif claim.key in got:
                self.chosen[claim.key] = (task.node, got[claim.key], {task.uid})

    def deallocated(self, task: TaskInfo) -> None:
        if self.unsettled.pop(task.uid, None) is not None:
            return  # undone before its devices were chosen: nothing to give back
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
        self.settle()
        return {key: (node, results) for key, (node, results, pods) in self.chosen.items() if task.uid in pods}
