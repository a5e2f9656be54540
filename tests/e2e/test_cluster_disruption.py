"""What the real apiserver does that a stand-in did not: the Eviction API with a
PodDisruptionBudget, graceful deletion, PersistentVolumeClaims bound by the PV controller,
and jobs that scale."""

from __future__ import annotations

import pytest

from central.kube.client import ApiError
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e




def running_pods(t: Tenant, job: str) -> list[dict]:
    return [p for p in t.pods(f"volcano.sh/job-name={job}")
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def test_eviction_api_respects_the_pdb_then_restarts_the_job(tenant: Tenant) -> None:
    ns = tenant.namespace
    tenant.submit(volcano_job("guarded", tenant.queue, replicas=2,
                                                  policies=[{"event": "PodEvicted", "action": "RestartJob"}]))
    wait_for(lambda: len(running_pods(tenant, "guarded")) == 2, "two running pods")
    first = {p["metadata"]["uid"] for p in running_pods(tenant, "guarded")}
    tenant.create(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep-two"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"volcano.sh/job-name": "guarded"}}}})
    wait_for(lambda: (tenant.kube.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/keep-two")
                      .get("status") or {}).get("observedGeneration"), "the disruption controller's PDB status")
    victim = running_pods(tenant, "guarded")[0]["metadata"]["name"]
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": victim, "namespace": ns}}
    with pytest.raises(ApiError) as refused:
        tenant.create(f"/api/v1/namespaces/{ns}/pods/{victim}/eviction", eviction)
    assert refused.value.code == 429, refused.value
    tenant.kube.delete(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/keep-two")
    tenant.create(f"/api/v1/namespaces/{ns}/pods/{victim}/eviction", eviction)
    # PodEvicted -> RestartJob: every pod is replaced, and the job runs again.
    wait_for(lambda: len(running_pods(tenant, "guarded")) == 2
             and not first & {p["metadata"]["uid"] for p in running_pods(tenant, "guarded")},
             "the job restarted with two new pods", timeout=90)
    assert tenant.job("guarded")["status"].get("retryCount", 0) >= 1


def test_job_with_a_volume_claim_starts_once_the_claim_is_bound(tenant: Tenant) -> None:
    ns = tenant.namespace
    tenant.create("/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{ns}"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "hostPath": {"path": f"/tmp/{ns}"}, "persistentVolumeReclaimPolicy": "Delete"}})
    job = volcano_job("withdata", tenant.queue, replicas=1, duration="2s", extra_spec={"volumes": [{
        "mountPath": "/data", "volumeClaim": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                                              "resources": {"requests": {"storage": "1Gi"}}}}]})
    tenant.submit(job)
    claims = wait_for(lambda: tenant.kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"],
                      "the claim the job controller creates")
    assert claims[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"
    wait_for(lambda: tenant.phase("withdata") == "Completed", "the job Completed on its bound claim", timeout=120)
    bound = tenant.kube.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{claims[0]['metadata']['name']}")
    assert bound["status"]["phase"] == "Bound" and bound["spec"]["volumeName"] == f"pv-{ns}"


def _scale(tenant: Tenant, name: str, replicas: int) -> None:
    url = f"{tenant.jobs}/{name}"
    for _ in range(10):  # re-read on 409, as kubectl does
        job = tenant.kube.get(url)
        task = job["spec"]["tasks"][0]
        task["replicas"] = replicas
        if "minAvailable" in task:  # the mutating webhook set it to the replicas at create
            task["minAvailable"] = replicas
        job["spec"]["minAvailable"] = replicas
        try:
            tenant.kube.request("PUT", url, body=job)
            return
        except ApiError as err:
            if err.code != 409:
                raise
    raise AssertionError("could not update the job")


@pytest.mark.parametrize("to", [3, 1])
def test_scaling_resizes_the_podgroup_and_the_pods(tenant: Tenant, to: int) -> None:
    tenant.submit(volcano_job(
        "elastic", tenant.queue, replicas=2, extra_spec={"plugins": {"svc": []}}))
    wait_for(lambda: len(running_pods(tenant, "elastic")) == 2, "two running pods")
    _scale(tenant, "elastic", to)
    wait_for(lambda: (tenant.job_podgroup("elastic") or {}).get("spec", {}).get("minMember") == to,
             f"PodGroup minMember {to}")
    wait_for(lambda: len(running_pods(tenant, "elastic")) == to
             and len(tenant.pods("volcano.sh/job-name=elastic")) == to, f"{to} pods")
    hosts = tenant.kube.get(f"/api/v1/namespaces/{tenant.namespace}/configmaps/elastic-svc")["data"]
    assert len(hosts["worker.host"].split()) == to, hosts


def test_a_deleted_pod_is_replaced_and_the_job_keeps_running(tenant: Tenant) -> None:
    tenant.submit(volcano_job("steady", tenant.queue, replicas=2))
    wait_for(lambda: len(running_pods(tenant, "steady")) == 2, "two running pods")
    victim = running_pods(tenant, "steady")[0]
    tenant.kube.delete(f"/api/v1/namespaces/{tenant.namespace}/pods/{victim['metadata']['name']}")  # graceful
    wait_for(lambda: len(running_pods(tenant, "steady")) == 2
             and victim["metadata"]["uid"] not in {p["metadata"]["uid"] for p in running_pods(tenant, "steady")},
             "the job controller to replace the deleted pod", timeout=90)
    wait_for(lambda: tenant.phase("steady") == "Running", "the job Running with its replacement")
