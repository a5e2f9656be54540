"""Dynamic Resource Allocation on a real control plane: gpu-1's simulated driver publishes 4
GPUs and 2 NICs as a ResourceSlice; the scheduler allocates a gang's claims (one claim per pod
from a ResourceClaimTemplate, created by kube-controller-manager's resourceclaim controller,
plus one claim all pods share) and writes allocation and reservedFor before each Binding; the
simulated kubelet starts a pod only once its claims are allocated and reserved for it. A gang
that cannot get all its devices binds nothing and says which claim falls short. Deleting the
job releases the devices."""

from __future__ import annotations

from typing import Any

import pytest

from central.localcluster.simdra import DRIVER, GPU_CLASS
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

RESOURCE = "/apis/resource.k8s.io/v1"


def gpus(count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": GPU_CLASS, "count": count}}]}}


def claims_url(tenant: Tenant) -> str:
    return f"{RESOURCE}/namespaces/{tenant.namespace}/resourceclaims"


def claim(tenant: Tenant, name: str) -> dict[str, Any]:
    return tenant.kube.get(f"{claims_url(tenant)}/{name}")


def template(tenant: Tenant, name: str, count: int) -> None:
    tenant.create(f"{RESOURCE}/namespaces/{tenant.namespace}/resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
        "spec": {"spec": gpus(count)}})


def dra_job(tenant: Tenant, name: str, replicas: int, claims: list[dict[str, str]]) -> dict[str, Any]:
    job = volcano_job(name, tenant.queue, replicas=replicas, duration="600s")
    job["spec"]["tasks"][0]["template"]["spec"]["resourceClaims"] = claims
    return job


def generated_claim(pod: dict[str, Any], entry: str) -> str | None:
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == entry:
            return status.get("resourceClaimName")
    return None


def test_a_gang_with_template_and_shared_claims_is_placed_runs_and_releases(tenant: Tenant) -> None:
    template(tenant, "one-gpu", 1)
    tenant.create(claims_url(tenant), {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                       "metadata": {"name": "shared"}, "spec": gpus(1)})
    tenant.submit(dra_job(tenant, "train", 2, [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                                               {"name": "common", "resourceClaimName": "shared"}]))
    pods = wait_for(lambda: (lambda ps: ps if len(ps) == 2 and all(p["status"].get("phase") == "Running"
                                                                   for p in ps) else None)(tenant.pods()),
                    what="both pods running", timeout=90)
    uids = {p["metadata"]["uid"] for p in pods}
    assert {p["spec"]["nodeName"] for p in pods} == {"gpu-1"}
    devices = set()
    for pod in pods:
        own = claim(tenant, generated_claim(pod, "gpu") or "")
        (result,) = own["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == (DRIVER, "gpu-1")
        assert [r["uid"] for r in own["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
        devices.add(result["device"])
    shared = claim(tenant, "shared")["status"]
    assert {r["uid"] for r in shared["reservedFor"]} == uids
    devices.add(shared["allocation"]["devices"]["results"][0]["device"])
    assert len(devices) == 3  # no device given twice

    generated = {generated_claim(p, "gpu") for p in pods}
    tenant.kube.delete(f"{tenant.jobs}/train")
    # the resourceclaim controller deletes the pods' own claims and deallocates the shared one
    wait_for(lambda: not {c["metadata"]["name"] for c in tenant.kube.get(claims_url(tenant))["items"]} & generated,
             what="the template claims deleted", timeout=90)
    wait_for(lambda: not (claim(tenant, "shared").get("status") or {}).get("allocation"),
             what="the shared claim released", timeout=90)


def test_a_gang_that_cannot_get_all_its_devices_binds_nothing_and_says_why(tenant: Tenant) -> None:
    template(tenant, "two-gpus", 2)  # 3 pods x 2 GPUs: gpu-1 has 4
    tenant.submit(dra_job(tenant, "big", 3, [{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}]))

    def why() -> str | None:
        group = tenant.job_podgroup("big") or {}
        for condition in (group.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Unschedulable" and "resource claims" in (condition.get("message") or ""):
                return str(condition["message"])
        return None

    message = wait_for(why, what="the PodGroup saying why", timeout=90)
    assert "class gpu.sim.caldera.sh" in message and "resourceclaim" in message, message
    assert all(not p["spec"].get("nodeName") for p in tenant.pods())
    assert all(not (c.get("status") or {}).get("allocation") for c in tenant.kube.get(claims_url(tenant))["items"])
