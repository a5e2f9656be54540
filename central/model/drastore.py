"""The DRA objects the scheduler knows: DeviceClasses, ResourceSlices, ResourceClaims and
ResourceClaimTemplates, and the devices allocated claims hold.

A pod names its claims in `spec.resourceClaims`: directly (`resourceClaimName`), or through a
template (`resourceClaimTemplateName`), whose claim kube-controller-manager's resourceclaim
controller creates and records in the pod's `status.resourceClaimStatuses`. Until it does, the
pod's claim is missing and the pod waits, as it does under kube-scheduler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from central.model.dra import (
    Device,
    DeviceClaimWrite,
    DeviceClass,
    DeviceId,
    ResourceClaim,
    ResourceSlice,
    parse_claim,
    parse_device_class,
    parse_slice,
)

DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")


def pod_device_claims(pod: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(entry name, claim name) per `spec.resourceClaims` entry; "" for a template's claim not created yet."""
    generated = {
        str(s.get("name", "")): str(s.get("resourceClaimName") or "")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or [] if isinstance(s, Mapping)
    }
    out = []
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        if not isinstance(ref, Mapping):
            continue
        entry = str(ref.get("name", ""))
        name = ref.get("resourceClaimName")
        out.append((entry, str(name) if name else generated.get(entry, "")))
    return tuple(out)


class MissingClaim(LookupError):
    """A pod's claim that does not exist (yet)."""


class DraStore:
    def __init__(self) -> None:
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        self.claims: dict[str, ResourceClaim] = {}  # "ns/name" -> claim
        self.templates: set[str] = set()  # "ns/name" of ResourceClaimTemplates
        self._holders: dict[DeviceId, set[str]] = {}  # device -> claims (not admin access) allocated it
        self._by_node: dict[str | None, list[Device]] | None = None  # node (None: every node) -> devices
        # claim -> (its latest version from the API, pods whose binds are writing its allocation)
        self._assumed: dict[str, tuple[ResourceClaim, set[str]]] = {}

    @property
    def faults(self) -> dict[str, str]:
        """Object -> why it is ignored, for every faulted class, slice and claim."""
        out: dict[str, str] = {}
        for table, kind in ((self.classes, "DeviceClass"), (self.slices, "ResourceSlice"), (self.claims, "ResourceClaim")):
            for key, obj in table.items():
                if obj.fault:
                    out[f"{kind} {key}"] = obj.fault
        return out

    @property
    def taken(self) -> set[DeviceId]:
        return set(self._holders)

    def is_held(self, device: DeviceId) -> bool:
        """Does an allocated claim (not admin access) hold the device?"""
        return device in self._holders

    @property
    def has_shared_devices(self) -> bool:
        """Is any device reachable from every node (a slice with allNodes)?"""
        self.devices_on("")
        return bool(self._by_node and self._by_node.get(None))

    def apply(self, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        if kind == "DeviceClass":
            klass = parse_device_class(obj)
            self.classes[klass.name] = klass
        elif kind == "ResourceSlice":
            parsed = parse_slice(obj)
            self.slices[parsed.name] = parsed
            self._by_node = None
        elif kind == "ResourceClaim":
            claim = parse_claim(obj)
            assumed = self._assumed.get(claim.key)
            if assumed is not None and not claim.allocated and not claim.fault:
                self._assumed[claim.key] = (claim, assumed[1])  # the watch does not show the bind's write yet
                return
            self._assumed.pop(claim.key, None)
            self._release(claim.key)
            self.claims[claim.key] = claim
            self._hold(claim)
        elif kind == "ResourceClaimTemplate":
            self.templates.add(f"{meta.get('namespace', 'default')}/{meta.get('name', '')}")

    def assume(self, pod_key: str, write: DeviceClaimWrite) -> None:
        """A bind in flight will write this allocation: show the claim allocated from now on,
        so the next cycle does not hand its devices out again (kube-scheduler's assume cache),
        until the watch shows the write or `forget` takes it back."""
        claim = self.claims.get(write.claim)
        if claim is None or not write.results:
            return
        if write.claim in self._assumed:
            self._assumed[write.claim][1].add(pod_key)
            return
        if claim.allocated:
            return
        self._assumed[write.claim] = (claim, {pod_key})
        self._release(claim.key)
        self.claims[claim.key] = dataclasses.replace(claim, allocated_node=write.node, results=write.results)
        self._hold(self.claims[claim.key])

    def forget(self, pod_key: str) -> None:
        """The pod's bind failed: the allocations only its bind was writing are the API's again."""
        for key, (api, pods) in list(self._assumed.items()):
            pods.discard(pod_key)
            if not pods:
                del self._assumed[key]
                self._release(key)
                self.claims[key] = api
                self._hold(api)

    def delete(self, kind: str, key: str) -> None:
        if kind == "ResourceClaim":
            self._assumed.pop(key, None)
            self._release(key)
            self.claims.pop(key, None)
        elif kind == "ResourceClaimTemplate":
            self.templates.discard(key)
        else:
            table: dict[str, Any] = self.classes if kind == "DeviceClass" else self.slices
            table.pop(key, None)
            self._by_node = None

    def devices_on(self, node: str) -> list[Device]:
        """The devices a pod on the node may use: its slices' and those of slices for every
        node (indexed once per change of slices, not scanned per node asked)."""
        if self._by_node is None:
            self._by_node = {}
            for slice_ in self.slices.values():
                for device in slice_.devices:
                    self._by_node.setdefault(device.node, []).append(device)
        everywhere = self._by_node.get(None, [])
        own = self._by_node.get(node, [])
        return own + everywhere if everywhere else own

    def _hold(self, claim: ResourceClaim) -> None:
        for result in claim.results:
            if not result.admin_access:
                self._holders.setdefault(result.device, set()).add(claim.key)

    def _release(self, key: str) -> None:
        old = self.claims.get(key)
        if old is None:
            return
        for result in old.results:
            holders = self._holders.get(result.device)
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del self._holders[result.device]

    def pod_claims(self, pod: Mapping[str, Any]) -> list[ResourceClaim]:
        """The pod's claims, in `spec.resourceClaims` order; MissingClaim names the first one absent."""
        meta = pod.get("metadata") or {}
        return self.task_claims(str(meta.get("namespace", "default")), str(meta.get("name", "")), pod_device_claims(pod))

    def task_claims(self, namespace: str, pod: str, refs: tuple[tuple[str, str], ...]) -> list[ResourceClaim]:
        out: list[ResourceClaim] = []
        for entry, name in refs:
            if not name:
                raise MissingClaim(f"waiting for resourceclaim {entry!r} of pod {namespace}/{pod} "
                                   f"to be created from its template")
            claim = self.claims.get(f"{namespace}/{name}")
            if claim is None:
                raise MissingClaim(f'resourceclaim "{name}" not found')
            out.append(claim)
        return out
