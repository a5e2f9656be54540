"""A pod's ResourceClaims as kube-scheduler's DynamicResources plugin sees them.

Filter: a node fits when the structured allocator (central/model/dra.py) can allocate every
claim of the pod there, from the node's ResourceSlices, with devices held by allocated claims
and by the claims this session chose taken. A claim already allocated pins the pod to its node.

Choice (on allocate): the pod's unallocated claims take the devices the filter found on its node;
a claim shared by several pods is allocated once and the later pods follow it. The choice is the
session's: a discarded statement gives the devices back, so a gang whose claims cannot all be
allocated places nothing. A victim's claims that reserve only that pod free their devices.

NUMA: when numa-aware gave the pod CPUs of some NUMA nodes (its `caldera.sh/numa-nodes`), the
pod's claims take devices of those NUMA nodes first (a device's `numa` attribute, else the NUMA
node the agent reports for the GPU with the device's `uuid`), so a GPU sits
next to the CPUs that feed it. The devices are therefore chosen when next needed (the next pod's
filter, an undo, the bind) rather than in the placement event itself, which may reach this
plugin before numa-aware has chosen the CPUs.

Bind (PreBind): each placed pod hands the sink a `DeviceClaimWrite` per claim once its devices
are chosen, so its bind writes the allocation (claims this session allocated) and its
`reservedFor` entry before the Binding; a discarded statement withdraws them with the placement,
and the session's close chooses what is still unchosen (`settle`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework.status import Check
from central.model.dra import (
    AllocationResult,
    Device,
    DeviceClaimWrite,
    DeviceId,
    Request,
    ResourceClaim,
    Unallocatable,
    allocate,
    device_numa,
)
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
        # (class, selectors) -> devices free per node row: the filter's count for a pod with one
        # plain request, dropped for a node whenever a device there changes hands this session
        self._free: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}  # per row; -1: not counted yet
        self._rows = {str(name): row for row, name in enumerate(self.names)}
        self._chosen_devices: set[DeviceId] = set()  # what the claims in `chosen` hold

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

    def _is_taken(self, device: DeviceId) -> bool:
        """Held by a claim this session chose, or by an allocated claim not freed this session."""
        return device in self._chosen_devices or (self.store.is_held(device) and not self._freed(device))

    def _taken_on(self, node: str) -> set[DeviceId]:
        return {d.id for d in self.store.devices_on(node) if self._is_taken(d.id)}

    def _allocation(self, task: TaskInfo, node: str,
                    prefer: Callable[[Device], bool] | None = None) -> dict[str, tuple[AllocationResult, ...]]:
        return allocate(self._claims(task), node, self.store.devices_on(node), self.store.classes,
                        self._taken_on(node), prefer)

    def _numa_preference(self, task: TaskInfo) -> Callable[[Device], bool] | None:
        """Devices on the NUMA nodes numa-aware gave the pod's CPUs; None when it gave none."""
        chosen = self.handle.annotation(task, NUMA_NODES) if self.prefer_numa else None
        if not chosen:
            return None
        try:
            cells = parse_index_list(chosen, f"Pod {task.uid}: {NUMA_NODES}", 1 << 16)
        except InputError:
            return None
        node = self.handle.nodes_by_name.get(task.node or "")
        report = self.handle.agents.data[node.index] if node is not None else None
        by_uuid = {card.uuid: card.numa for card in report.gpus if card.uuid and card.numa >= 0} if report else {}
        return lambda device: device_numa(device, by_uuid) in cells

    def settle(self) -> None:
        """Choose the devices of the pods placed since the last call, in placement order."""
        while self.unsettled:
            uid = next(iter(self.unsettled))
            task = self.unsettled.pop(uid)
            self._choose(task)

    def _single_request(self, claims: list[ResourceClaim]) -> tuple[ResourceClaim, Request] | None:
        """The pod's one claim and request when that is all it asks: one unallocated claim, one
        `exactly` request of a sound class, no constraints or admin access. Then a node fits
        exactly when it has `count` free devices passing the selectors, so counting suffices."""
        if len(claims) != 1 or self.store.has_shared_devices:
            return None
        claim = claims[0]
        if claim.fault or claim.allocated or claim.constraints or len(claim.requests) != 1:
            return None
        request = claim.requests[0]
        device_class = self.store.classes.get(request.device_class)
        if request.all or request.admin_access or device_class is None or device_class.fault:
            return None
        return claim, request

    def _free_counts(self, request: Request, rows: np.ndarray) -> np.ndarray:
        key = (request.device_class, request.selectors)
        counts = self._free.get(key)
        if counts is None:
            counts = self._free[key] = np.full(len(self.names), -1, dtype=np.int64)
        selectors = self.store.classes[request.device_class].selectors + request.selectors
        for row in rows[counts[rows] < 0].tolist():
            counts[row] = sum(1 for d in self.store.devices_on(str(self.names[row]))
                              if not self._is_taken(d.id) and all(d.passes(s) for s in selectors))
        return counts[rows]

    def _freed(self, device: DeviceId) -> bool:
        """Is the device held only by claims freed this session? (held: checked by the caller)"""
        return any(device in {r.device for r in self.store.claims[key].results} for key in self.freed)

    def _changed(self, node: str | None) -> None:
        """Devices on the node changed hands: its counts are stale."""
        row = self._rows.get(node) if node else None
        for counts in self._free.values():
            if row is not None:
                counts[row] = -1
            else:
                counts[:] = -1

    def _counted_checks(self, claim: ResourceClaim, request: Request, rows: np.ndarray) -> list[Check]:
        free = self._free_counts(request, rows)
        fits = free >= request.count
        short = free[~fits]
        reason = ""
        if len(short):  # the commonest shortfall, in the allocator's words
            values, counts = np.unique(short, return_counts=True)
            reason = (f"resourceclaim {claim.key}: request {request.name}: needs {request.count} "
                      f"device(s) of class {request.device_class}, {int(values[np.argmax(counts)])} free")
        return [Check(fits, f"node(s) cannot allocate the pod's resource claims: {reason}")]

    def checks(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        self.settle()
        try:
            claims = self._claims(task)
        except MissingClaim as missing:
            return [Check(np.zeros(len(rows), dtype=bool), str(missing))]
        single = self._single_request(claims)
        if single is not None:
            return self._counted_checks(*single, rows)
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
        if task.node is not None:
            self.unsettled[task.uid] = task

    def _choose(self, task: TaskInfo) -> None:
        assert task.node is not None
        try:
            got = self._allocation(task, task.node, self._numa_preference(task))
        except (MissingClaim, Unallocatable):
            return  # placed by an action that checked no predicates (an already bound pod)
        writes = []
        for claim in self._claims(task):
            if claim.key in self.chosen:  # another pod of this session allocated it: same allocation
                self.chosen[claim.key][2].add(task.uid)
                writes.append(DeviceClaimWrite(claim.key, task.node, self.chosen[claim.key][1]))
            elif claim.key in got:
                self.chosen[claim.key] = (task.node, got[claim.key], {task.uid})
                self._chosen_devices.update(r.device for r in got[claim.key] if not r.admin_access)
                self._changed(task.node)
                writes.append(DeviceClaimWrite(claim.key, task.node, got[claim.key]))
            else:  # allocated before this session: the pod is only added to reservedFor
                writes.append(DeviceClaimWrite(claim.key, task.node))
        self.handle.reserve_device_claims(task, tuple(writes))

    def deallocated(self, task: TaskInfo) -> None:
        self.handle.reserve_device_claims(task, ())
        if self.unsettled.pop(task.uid, None) is not None:
            return  # undone before its devices were chosen: nothing to give back
        for _, name in task.device_claims:
            key = f"{task.namespace}/{name}"
            chosen = self.chosen.get(key)
            if chosen is not None:
                chosen[2].discard(task.uid)
                if not chosen[2]:
                    del self.chosen[key]
                    self._chosen_devices.difference_update(r.device for r in chosen[1] if not r.admin_access)
                    self._changed(chosen[0])
            elif task.status == TaskStatus.RELEASING:
                claim = self.store.claims.get(key)
                if claim is not None and claim.allocated and claim.reserved_for == (task.name,):
                    self.freed.add(key)
                    self._changed(claim.allocated_node)

    def allocation_of(self, task: TaskInfo) -> dict[str, tuple[str, tuple[AllocationResult, ...]]]:
        """The claims this session allocated that the placed pod uses: what the bind writes first."""
        self.settle()
        return {key: (node, results) for key, (node, results, pods) in self.chosen.items() if task.uid in pods}
