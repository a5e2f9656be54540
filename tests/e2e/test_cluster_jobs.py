"""Volcano Jobs on a real kube-apiserver: admission through the apiserver's chain, the job
lifecycle with the real job, PodGroup and queue controllers, and the simulated kubelets."""

from __future__ import annotations

import pytest

from central.kube.client import ApiError
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e




def test_crds_are_structural_and_established(tenant: Tenant) -> None:
    for name in ("jobs.batch.volcano.sh", "queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh",
                 "commands.bus.volcano.sh"):
        crd = tenant.kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions.get("Established") == "True", name
        assert conditions.get("NonStructuralSchema") != "True", name


def test_job_runs_to_completion(tenant: Tenant) -> None:
    tenant.submit(volcano_job("done", tenant.queue, replicas=2, duration="3s"))
    pg = wait_for(lambda: tenant.job_podgroup("done"), "the Job's PodGroup")
    assert pg["spec"]["minMember"] == 2 and pg["spec"]["queue"] == tenant.queue
    wait_for(lambda: len(tenant.pods()) == 2 and all(p["spec"].get("nodeName") for p in tenant.pods()),
             "both pods bound")
    wait_for(lambda: tenant.phase("done") == "Running", "the Job Running")
    wait_for(lambda: tenant.phase("done") == "Completed", "the Job Completed", timeout=90)
    assert all(p["status"]["phase"] == "Succeeded" for p in tenant.pods())


def test_malformed_job_is_refused_with_the_field_named(tenant: Tenant) -> None:
    bad = volcano_job("bad", tenant.queue, replicas=2, min_available=5)  # minAvailable above total replicas
    with pytest.raises(ApiError) as refused:
        tenant.submit(bad)
    assert refused.value.code in (400, 422) and "minAvailable" in refused.value.message
    wrong_type = volcano_job("typed", tenant.queue)
    wrong_type["spec"]["minAvailable"] = "two"  # the CRD's schema refuses it before any webhook
    with pytest.raises(ApiError) as schema:
        tenant.submit(wrong_type)
    assert schema.value.code == 422 and "minAvailable" in schema.value.message


def test_failed_pod_restarts_the_job_until_max_retry(tenant: Tenant) -> None:
    job = volcano_job("flaky", tenant.queue, replicas=1, duration="1s", exit_code=3, max_retry=2,
                      policies=[{"event": "PodFailed", "action": "RestartJob"}])
    tenant.submit(job)
    wait_for(lambda: tenant.phase("flaky") == "Failed", "the Job Failed after its retries", timeout=120)
    status = tenant.job("flaky")["status"]
    assert status.get("retryCount") == 2, status


def test_objects_from_volcanos_documentation_are_accepted_and_run(tenant: Tenant) -> None:
    from pathlib import Path

    import yaml

    from central.localcluster.install import Discovery, apply

    text = (Path(__file__).parents[1] / "data" / "volcano-docs" / "objects.yaml").read_text()
    discovery = Discovery(tenant.kube)
    for obj in yaml.safe_load_all(text.replace("QUEUE", tenant.queue + "-docs")):
        if obj["kind"] not in ("PriorityClass", "Queue"):
            obj["metadata"]["namespace"] = tenant.namespace
        apply(tenant.kube, discovery, obj)  # the real apiserver, the webhook, the schema
    wait_for(lambda: tenant.phase("docs-job") == "Running", "the documented job Running", timeout=90)
    ns = tenant.namespace
    assert tenant.kube.get(f"/api/v1/namespaces/{ns}/services/docs-job")  # svc plugin
    assert tenant.kube.get(f"/api/v1/namespaces/{ns}/configmaps/docs-job-svc")
    pods = tenant.pods("volcano.sh/job-name=docs-job")
    assert len(pods) == 3 and all(p["status"]["phase"] == "Running" for p in pods)
    assert all(p["spec"].get("priority") == 1000 for p in pods)  # Priority admission resolved `normal`
    env = {e["name"] for p in pods for c in p["spec"]["containers"] for e in c.get("env", [])}
    assert {"VK_TASK_INDEX", "VC_TASK_INDEX"} <= env  # env plugin
