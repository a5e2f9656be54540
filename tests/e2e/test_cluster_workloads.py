"""CronJobs and JobFlows on a real kube-apiserver: the controllers create Volcano Jobs through
their own token (RBAC and the admission policy that confines it), the scheduler and the simulated
kubelets run them, and the webhook refuses bad specs through the API server's chain."""

from __future__ import annotations

from typing import Any

import pytest

from central.kube.client import ApiError, KubeClient
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

FLOW = "/apis/flow.volcano.sh/v1alpha1/namespaces"


def owned_jobs(tenant: Tenant, kind: str) -> list[dict[str, Any]]:
    return sorted((j for j in tenant.kube.get(tenant.jobs)["items"]
                   if any(r.get("kind") == kind for r in j["metadata"].get("ownerReferences") or [])),
                  key=lambda j: j["metadata"]["name"])


def test_a_cronjob_starts_jobs_on_its_schedule_and_trims_history(tenant: Tenant) -> None:
    template = volcano_job("unused", tenant.queue, replicas=1, duration="1s")
    url = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{tenant.namespace}/cronjobs"
    tenant.create(url, {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": "every-minute"},
                        "spec": {"schedule": "*/1 * * * *", "successfulJobsHistoryLimit": 1,
                                 "jobTemplate": {"spec": template["spec"]}}})
    first = wait_for(lambda: owned_jobs(tenant, "CronJob") or None, "the first scheduled Job", timeout=90)[0]
    assert first["metadata"]["name"].startswith("every-minute-")
    assert "volcano.sh/cronjob-scheduled-timestamp" in first["metadata"]["annotations"]
    status = wait_for(lambda: (s := tenant.kube.get(f"{url}/every-minute").get("status") or {}).get("lastScheduleTime") and s,
                      "status.lastScheduleTime")
    assert status["lastScheduleTime"]

    def trimmed() -> list[str] | None:
        jobs = owned_jobs(tenant, "CronJob")
        names = [j["metadata"]["name"] for j in jobs]
        return names if first["metadata"]["name"] not in names and jobs else None

    left = wait_for(trimmed, "a second run, and the first Job deleted by the history limit", timeout=150)
    assert len(left) == 1
    final = wait_for(lambda: (s := tenant.kube.get(f"{url}/every-minute").get("status") or {}).get("lastSuccessfulTime") and s,
                     "status.lastSuccessfulTime")
    assert final["lastSuccessfulTime"]


def test_a_bad_cron_schedule_is_refused_naming_the_field(tenant: Tenant) -> None:
    url = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{tenant.namespace}/cronjobs"
    with pytest.raises(ApiError) as refused:
        tenant.create(url, {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": "bad"},
                            "spec": {"schedule": "61 * * * *",
                                     "jobTemplate": {"spec": volcano_job("x", tenant.queue, replicas=1)["spec"]}}})
    assert "spec.schedule" in refused.value.message


def test_a_jobflow_runs_b_after_a_completes(tenant: Tenant) -> None:
    for name in ("a", "b"):
        spec = volcano_job(name, tenant.queue, replicas=1, duration="3s")["spec"]
        tenant.create(f"{FLOW}/{tenant.namespace}/jobtemplates", {
            "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": name}, "spec": spec})
    tenant.create(f"{FLOW}/{tenant.namespace}/jobflows", {
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "ab"},
        "spec": {"jobRetainPolicy": "retain", "flows": [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]}})
    b = wait_for(lambda: tenant.kube.get_or_none(f"{tenant.jobs}/ab-b"), "ab-b created", timeout=90)
    a = tenant.job("ab-a")
    assert a["status"]["state"]["phase"] == "Completed"  # b waited for a: made after a completed
    assert b["metadata"]["creationTimestamp"] >= a["status"]["state"]["lastTransitionTime"]
    assert b["metadata"]["labels"]["volcano.sh/createdByJobFlow"] == f"{tenant.namespace}.ab"
    flow = wait_for(lambda: (f := tenant.kube.get(f"{FLOW}/{tenant.namespace}/jobflows/ab"))["status"].get(
        "state", {}).get("phase") == "Succeed" and f, "the JobFlow Succeed", timeout=90)
    assert flow["status"]["completedJobs"] == ["ab-a", "ab-b"]
    template = wait_for(lambda: (t := tenant.kube.get(f"{FLOW}/{tenant.namespace}/jobtemplates/a")).get("status") and t,
                        "the JobTemplate's status")
    assert template["status"]["jobDependsOnList"] == ["ab-a"]


def test_a_jobflow_with_a_cycle_is_refused(tenant: Tenant) -> None:
    with pytest.raises(ApiError) as refused:
        tenant.create(f"{FLOW}/{tenant.namespace}/jobflows", {
            "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "loop"},
            "spec": {"flows": [{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}]}})
    assert "jobflow Flow is not DAG" in refused.value.message and "spec.flows" in refused.value.message


def test_the_controllers_token_cannot_create_a_job_no_cronjob_or_jobflow_controls(tenant: Tenant) -> None:
    controllers = KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / "caldera-controllers"))
    with pytest.raises(ApiError) as refused:
        controllers.create(tenant.jobs, volcano_job("free", tenant.queue, replicas=1))
    assert refused.value.code == 403 and "caldera-controllers-workload-jobs" in refused.value.message
