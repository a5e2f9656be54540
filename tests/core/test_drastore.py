"""The cache's DRA store: objects fed through the cache, devices held by allocated claims,
and a pod's claims resolved directly or through a template's generated claim."""

from __future__ import annotations

from typing import Any

import pytest

from central.model.cache import ClusterCache
from central.model.dra import DeviceClaimWrite, allocate, allocation_status, node_devices
from central.model.drastore import MissingClaim
from tests.dra_builders import DRIVER, NODE, claim, device_class, exactly


def feed(cache: ClusterCache, kind: str, obj: dict[str, Any]) -> None:
    cache.apply({"apiVersion": "resource.k8s.io/v1", "kind": kind, **obj})


def pod(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "p"}, "spec": {"resourceClaims": claims},
            "status": {"resourceClaimStatuses": statuses or []}}


def loaded() -> ClusterCache:
    cache = ClusterCache()
    feed(cache, "DeviceClass", device_class("gpu", "gpu"))
    feed(cache, "ResourceSlice", NODE)
    return cache


def test_allocated_claims_hold_their_devices_until_replaced_or_deleted() -> None:
    cache = loaded()
    store = cache.dra
    devices = node_devices(store.slices.values(), "n1")
    got = allocate([_claim(cache)], "n1", devices, store.classes, store.taken)
    feed(cache, "ResourceClaim", claim("c", [exactly("g", count=2)], status={"allocation": allocation_status("n1", got["ns/c"])}))
    assert store.taken == {(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-1")}
    feed(cache, "ResourceClaim", claim("c", [exactly("g", count=2)]))  # deallocated
    assert store.taken == set()
    feed(cache, "ResourceClaim", claim("c", [exactly("g", count=2)], status={"allocation": allocation_status("n1", got["ns/c"])}))
    cache.delete("ResourceClaim", "ns", "c")
    assert store.taken == set() and "ns/c" not in store.claims


def test_a_bind_in_flight_holds_its_devices_until_the_watch_shows_them_or_the_bind_fails() -> None:
    cache = loaded()
    store = cache.dra
    got = allocate([_claim(cache)], "n1", node_devices(store.slices.values(), "n1"), store.classes, store.taken)
    write = DeviceClaimWrite("ns/c", "n1", got["ns/c"])
    store.assume("ns/p", write)
    store.assume("ns/q", write)  # a second pod sharing the claim
    held = {(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-1")}
    assert store.taken == held and store.claims["ns/c"].allocated_node == "n1"
    feed(cache, "ResourceClaim", claim("c", [exactly("g", count=2)]))  # an update older than the bind's write
    assert store.taken == held
    store.forget("ns/p")
    assert store.taken == held  # q's bind still writes it
    store.forget("ns/q")
    assert store.taken == set() and not store.claims["ns/c"].allocated  # the API's version again
    store.assume("ns/p", write)
    feed(cache, "ResourceClaim", claim("c", [exactly("g", count=2)], status={"allocation": allocation_status("n1", got["ns/c"])}))
    store.forget("ns/p")  # the watch showed the write: nothing assumed is left to take back
    assert store.taken == held


def _claim(cache: ClusterCache) -> Any:
    feed(cache, "ResourceClaim", claim("c", [exactly("g", count=2)]))
    return cache.dra.claims["ns/c"]


def test_pod_claims_resolve_direct_and_template_generated_names() -> None:
    cache = loaded()
    feed(cache, "ResourceClaim", claim("shared", [exactly("g")]))
    feed(cache, "ResourceClaim", claim("p-gpu-x1", [exactly("g")]))
    refs = [{"name": "s", "resourceClaimName": "shared"}, {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    with pytest.raises(MissingClaim, match="to be created from its template"):
        cache.dra.pod_claims(pod(refs))
    got = cache.dra.pod_claims(pod(refs, [{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]))
    assert [c.key for c in got] == ["ns/shared", "ns/p-gpu-x1"]
    with pytest.raises(MissingClaim, match='"nope" not found'):
        cache.dra.pod_claims(pod([{"name": "x", "resourceClaimName": "nope"}]))


def test_faulted_objects_are_listed_and_the_rest_kept() -> None:
    cache = loaded()
    feed(cache, "ResourceSlice", {"metadata": {"name": "dup"}, "spec": {"driver": DRIVER, "nodeName": "n2", "pool": {"name": "n2"},
                                                                   "devices": [{"name": "a"}, {"name": "a"}]}})
    feed(cache, "ResourceClaimTemplate", {"metadata": {"namespace": "ns", "name": "one-gpu"}, "spec": {}})
    assert list(cache.dra.faults) == ["ResourceSlice dup"]
    assert len(cache.dra.slices["n1-gpus"].devices) == 6 and cache.dra.templates == {"ns/one-gpu"}
    cache.delete("ResourceSlice", None, "dup")
    assert cache.dra.faults == {}
