"""ResourceClaims on the real kube-apiserver: the scheduler learns the DRA objects from its
informers and, before each Binding, writes the claim's allocation and reservation (as
kube-scheduler's DynamicResources PreBind); a failed claim write or Binding takes them back."""

from __future__ import annotations

import threading
from typing import Any

from central.framework.conf import SchedulerConf
from central.kube.informer import Reflector
from central.scheduler import load_config
from central.scheduler.claimwriter import FINALIZER
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod
from tests.dra_builders import DRIVER, claim, device_class, exactly, gpu, slice_
from tests.waiting import eventually

V1 = "resource.k8s.io/v1"
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates, arguments: {predicate.DynamicResourceAllocationEnable: true}},
            {name: proportion}, {name: nodeorder}]
"""


def start(kube: Any, conf: SchedulerConf) -> tuple[Scheduler, threading.Event, threading.Thread]:
    from central.model.cache import ClusterCache

    scheduler = Scheduler(kube, ClusterCache(), run_cycle, ConfigFile(None, load_config, conf), period=0.05,
                          bind_backoff=(0.05, 0.1))
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    return scheduler, stop, thread


def dra_cluster(real: Any, gpus: int = 2) -> None:
    real.put(node("n1", pods=10))
    real.put({"apiVersion": V1, "kind": "DeviceClass", **device_class(f"gpu-{real.namespace}", "gpu")})
    s = slice_("n1", [gpu(f"gpu-{i}", i % 2) for i in range(gpus)])
    s["metadata"]["name"] = f"n1-{real.namespace}"
    s["spec"]["pool"].update(generation=1, resourceSliceCount=1)  # the API server requires both
    real.put({"apiVersion": V1, "kind": "ResourceSlice", **s})


def gpu_claim(real: Any, name: str) -> None:
    real.put({"apiVersion": V1, "kind": "ResourceClaim", **claim(name, [exactly("g", cls=f"gpu-{real.namespace}")])})


def claiming(name: str, *claims: str) -> dict[str, Any]:
    return pod(name, resourceClaims=[{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)])


def status(real: Any, name: str) -> dict[str, Any]:
    return real.get(V1, "ResourceClaim", name).get("status") or {}


def reserved_for(real: Any, name: str) -> list[str]:
    return sorted(r["name"] for r in status(real, name).get("reservedFor") or [])


def run_until(real: Any, conf: SchedulerConf, done: Any, what: str, kube: Any = None) -> Scheduler:
    scheduler, stop, thread = start(kube or real.kube, conf)
    try:
        eventually(done, what=what)
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    return scheduler


def test_bind_allocates_and_reserves_each_claim_a_shared_one_once(real, tmp_path):
    dra_cluster(real)
    gpu_claim(real, "own")
    gpu_claim(real, "shared")
    real.put(claiming("a", "own", "shared"))
    real.put(claiming("b", "shared"))
    kube = real.as_account("caldera-scheduler", tmp_path)  # the installed RBAC covers informers and writes
    run_until(real, load_config(CONF), lambda: real.pod("a")["spec"].get("nodeName")
              and real.pod("b")["spec"].get("nodeName"), "both pods bound", kube)
    own, shared = status(real, "own"), status(real, "shared")
    assert reserved_for(real, "own") == ["a"] and reserved_for(real, "shared") == ["a", "b"]
    assert {r["uid"] for r in own["reservedFor"]} == {real.pod("a")["metadata"]["uid"]}
    (mine,), (common,) = own["allocation"]["devices"]["results"], shared["allocation"]["devices"]["results"]
    assert (mine["driver"], mine["pool"], mine["request"]) == (DRIVER, "n1", "g") and mine["device"] != common["device"]
    assert own["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
    assert FINALIZER in real.get(V1, "ResourceClaim", "own")["metadata"]["finalizers"]  # the controller may deallocate it


def test_a_failed_binding_takes_the_claim_back_before_the_retry(real):
    dra_cluster(real, gpus=1)
    gpu_claim(real, "c")
    real.put(claiming("a", "c"))
    real.proxy.fail("create", "pods/binding", code=500, times=1)
    scheduler = run_until(real, load_config(CONF), lambda: real.pod("a")["spec"].get("nodeName"), "pod a bound")
    assert scheduler.sink.counts["bind_failed"] == 1
    # reserved and allocated, released (allocation cleared: nobody else held it), written again
    assert real.proxy.count("update", "resourceclaims/status", real.namespace) == 3
    assert reserved_for(real, "c") == ["a"] and status(real, "c")["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_a_failed_claim_write_fails_the_bind_and_releases_what_was_written(real):
    dra_cluster(real)
    for name in ("c1", "c2"):
        gpu_claim(real, name)
    # c1 carries the finalizer already, so the one finalizer update, c2's, comes after c1's
    # status was written: refusing it fails the bind with c1 allocated and reserved
    real.admin.merge_patch(real.url(V1, "ResourceClaim", "c1"), {"metadata": {"finalizers": [FINALIZER]}})
    real.put(claiming("a", "c1", "c2"))
    real.proxy.fail("update", "resourceclaims", code=500, times=1)
    scheduler = run_until(real, load_config(CONF), lambda: real.pod("a")["spec"].get("nodeName"), "pod a bound")
    assert scheduler.sink.counts["bind_failed"] == 1 and real.proxy.count("create", "pods/binding") == 1
    # c1 written, c1 released, then both written on the retry
    assert real.proxy.count("update", "resourceclaims/status", real.namespace) == 4
    assert reserved_for(real, "c1") == ["a"] and reserved_for(real, "c2") == ["a"]
    devices = {status(real, c)["allocation"]["devices"]["results"][0]["device"] for c in ("c1", "c2")}
    assert devices == {"gpu-0", "gpu-1"}


def test_a_pod_whose_claims_cannot_be_allocated_is_not_bound_and_nothing_is_written(real):
    dra_cluster(real, gpus=1)
    for name in ("c1", "c2"):
        gpu_claim(real, name)
    real.put(claiming("a", "c1", "c2"))
    scheduler, stop, thread = start(real.kube, load_config(CONF))
    try:
        eventually(lambda: scheduler.cycles >= 3, what="three cycles")
    finally:
        stop.set()
        thread.join(10)
    assert not real.pod("a")["spec"].get("nodeName")
    assert real.proxy.count("update", "resourceclaims/status", real.namespace) == 0
    assert status(real, "c1") == {} and status(real, "c2") == {}


def test_an_api_the_cluster_does_not_serve_counts_as_empty_and_synced(real):
    seen: list[str] = []
    reflector = Reflector(real.kube, "/apis/nothere.caldera.sh/v1/things", lambda kind, obj: seen.append(kind),
                          optional=True, backoff=(0.05, 0.2)).start()
    required = Reflector(real.kube, "/apis/nothere.caldera.sh/v1/things", lambda kind, obj: None,
                         backoff=(0.05, 0.2)).start()
    try:
        eventually(reflector.synced.is_set, what="the optional reflector synced")
        assert not reflector.served and reflector.objects == {} and seen == []
        assert not required.synced.wait(0.5)  # without `optional` a 404 is retried, never synced
    finally:
        reflector.stop()
        required.stop()


def test_an_optional_api_this_component_may_not_list_counts_as_empty_and_synced(real, tmp_path):
    """A grant left out of a component's RBAC for an optional API (403) must not hold back its
    other work: the reflector syncs empty, as for an API the cluster does not serve."""
    scheduler = real.as_account("caldera-scheduler", tmp_path)
    reflector = Reflector(scheduler, "/api/v1/secrets", lambda kind, obj: None,
                          optional=True, backoff=(0.05, 0.2)).start()
    try:
        eventually(reflector.synced.is_set, what="the optional reflector synced")
        assert not reflector.served and reflector.objects == {}
    finally:
        reflector.stop()
