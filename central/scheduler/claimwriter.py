"""The bind's ResourceClaim pre-step, as kube-scheduler's DynamicResources PreBind and Unreserve.

Before a pod's Binding, each of its claims gets, in one write to the `status` subresource, the
allocation this cycle chose (`status.allocation`: devices.results and the node's
nodeSelector), when the claim is not allocated yet, and the pod in `status.reservedFor`
(resource: pods, name, uid); a claim already allocated, shared by pods of the same gang or
allocated before, gets only the reservation. Allocating first adds the
`resource.kubernetes.io/delete-protection` finalizer, as kube-scheduler does: it tells
kube-controller-manager's resourceclaim controller that it may clear the allocation once no
pod reserves the claim any more (a finished or deleted pod's entry is removed by that
controller, not by the scheduler).

Each write reads the claim first and retries on a conflict (another bind of a shared claim,
the controller), so concurrent binds never lose each other's entries. A claim found allocated
to other devices than this cycle chose fails the write: the cycle's picture was stale.

`release` takes back what `reserve` wrote for the pod, on a failed claim write or Binding:
the pod leaves `reservedFor`, and an allocation this bind wrote is cleared when no other pod
reserves the claim, so its devices are free for the next cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from central.kube.client import RESOURCE, ApiError, KubeClient, path
from central.model.dra import DeviceClaimWrite, allocation_status

log = logging.getLogger(__name__)

FINALIZER = "resource.kubernetes.io/delete-protection"
CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Reserved:
    """One claim the pre-step wrote for the pod: what `release` must take back."""

    claim: str  # "<namespace>/<name>"
    allocated: bool  # this bind wrote the allocation


class ClaimWriter:
    def __init__(self, client: KubeClient):
        self.client = client

    def reserve(self, pod_name: str, pod_uid: str, writes: tuple[DeviceClaimWrite, ...]) -> list[Reserved]:
        """Allocate and reserve each claim for the pod. On failure, what was written so far is
        released and the ApiError raised."""
        done: list[Reserved] = []
        try:
            for write in writes:
                allocated = self._retry(write.claim, partial(self._reserve_one, write=write, pod_name=pod_name,
                                                             pod_uid=pod_uid))
                done.append(Reserved(write.claim, bool(allocated)))
        except ApiError:
            self.release(pod_uid, done)
            raise
        return done

    def release(self, pod_uid: str, reserved: list[Reserved]) -> None:
        """Take the pod back out of the claims (best effort: a failure is logged, and the
        resourceclaim controller removes the entry once the pod is gone)."""
        for entry in reserved:
            try:
                self._retry(entry.claim, partial(self._release_one, entry=entry, pod_uid=pod_uid))
            except ApiError as err:
                log.warning("cannot release resourceclaim %s for pod uid %s: %s", entry.claim, pod_uid, err)

    # --- one claim ------------------------------------------------------------------------------

    def _retry(self, key: str, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Read the claim, apply `change` (which writes it), again on a 409 Conflict."""
        namespace, name = key.split("/", 1)
        url = path(RESOURCE, "resourceclaims", namespace, name)
        for attempt in range(CONFLICT_RETRIES):
            claim = self.client.get(url)
            try:
                return change(claim)
            except ApiError as err:
                if err.code != 409 or attempt == CONFLICT_RETRIES - 1:
                    raise
        return None  # unreachable: the last attempt raises

    def _reserve_one(self, claim: dict[str, Any], write: DeviceClaimWrite, pod_name: str, pod_uid: str) -> bool:
        """Write the allocation (when the claim has none) and the reservation; True when this
        write allocated the claim."""
        meta, status = claim["metadata"], claim.get("status") or {}
        if meta.get("deletionTimestamp"):
            raise ApiError(409, "Conflict", f"resourceclaim {write.claim} is being deleted")
        reserved = status.get("reservedFor") or []
        if any(r.get("uid") == pod_uid for r in reserved):
            return False  # written by an earlier attempt whose answer was lost
        allocating = not status.get("allocation")
        if allocating:
            if not write.results:
                raise ApiError(409, "Conflict", f"resourceclaim {write.claim} is no longer allocated")
            if FINALIZER not in (meta.get("finalizers") or []):  # a normal update, before the status one
                meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                claim = self.client.request("PUT", self._url(write.claim), body=claim)
                status = claim.get("status") or {}
            status["allocation"] = allocation_status(write.node, write.results)
        elif write.results and _devices(status["allocation"]) != _devices(allocation_status(write.node, write.results)):
            raise ApiError(409, "Conflict", f"resourceclaim {write.claim} got allocated elsewhere in the meantime")
        status["reservedFor"] = [*reserved, {"resource": "pods", "name": pod_name, "uid": pod_uid}]
        claim["status"] = status
        self.client.request("PUT", self._url(write.claim, "status"), body=claim)
        return allocating

    def _release_one(self, claim: dict[str, Any], entry: Reserved, pod_uid: str) -> None:
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        remaining = [r for r in reserved if r.get("uid") != pod_uid]
        if len(remaining) == len(reserved) and not (entry.allocated and not remaining and status.get("allocation")):
            return  # nothing of ours left
        status["reservedFor"] = remaining or None
        if entry.allocated and not remaining:
            status["allocation"] = None
        claim["status"] = status
        self.client.request("PUT", self._url(entry.claim, "status"), body=claim)

    @staticmethod
    def _url(key: str, sub: str | None = None) -> str:
        namespace, name = key.split("/", 1)
        return path(RESOURCE, "resourceclaims", namespace, name, sub)


def _devices(allocation: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(str(r.get("request")), str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            for r in (allocation.get("devices") or {}).get("results") or []}
