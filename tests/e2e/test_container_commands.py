"""The simulated kubelets run what a container's command says (`sh -c "exit 1"`,
`sleep 3`) when a pod carries no `sim.caldera.sh/duration`, so Jobs written as Volcano's e2e
specs write them end as they would on a real node."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e


def scripted_job(name: str, tenant: Tenant, script: str, action: str, **options: Any) -> dict[str, Any]:
    job = volcano_job(name, tenant.queue, replicas=1, policies=[{"event": "PodFailed", "action": action}], **options)
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container.update(command=["/bin/sh"], args=["-c", script])
    return job


def test_a_pod_exiting_1_aborts_its_job(tenant: Tenant) -> None:
    tenant.submit(scripted_job("abort", tenant, "exit 1", "AbortJob"))
    wait_for(lambda: tenant.phase("abort") == "Aborted", "the Job Aborted", timeout=90)


def test_a_pod_exiting_1_restarts_its_job_until_max_retry(tenant: Tenant) -> None:
    tenant.submit(scripted_job("restart", tenant, "sleep 1; exit 1", "RestartJob", max_retry=2))
    wait_for(lambda: tenant.phase("restart") == "Failed", "the Job Failed after its retries", timeout=120)
    assert tenant.job("restart")["status"].get("retryCount") == 2


def test_init_containers_then_containers_and_the_pod_fails_if_one_failed(tenant: Tenant) -> None:
    def sh(name: str, script: str) -> dict[str, Any]:
        return {"name": name, "image": "busybox", "command": ["sh", "-c", script],
                "resources": {"requests": {"cpu": "100m"}}}

    tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "multi"},
        "spec": {"schedulerName": "volcano", "restartPolicy": "Never",
                 "initContainers": [sh("first", "sleep 2"), sh("second", "true")],
                 "containers": [sh("quick", "sleep 1"), sh("failing", "sleep 3; exit 2")]}})
    url = f"/api/v1/namespaces/{tenant.namespace}/pods/multi"

    def initializing() -> bool:
        status = tenant.kube.get(url).get("status") or {}
        running = [c["name"] for c in status.get("initContainerStatuses") or [] if "running" in c["state"]]
        return status.get("phase") == "Pending" and running == ["first"]

    wait_for(initializing, "the first init container running, the pod Pending")
    wait_for(lambda: tenant.kube.get(url)["status"]["phase"] == "Failed", "the pod Failed", timeout=60)
    status = tenant.kube.get(url)["status"]
    codes = {c["name"]: c["state"]["terminated"]["exitCode"] for c in status["containerStatuses"]}
    assert codes == {"quick": 0, "failing": 2}
    assert all(c["state"]["terminated"]["exitCode"] == 0 for c in status["initContainerStatuses"])


def test_a_failing_init_container_restarts_under_on_failure_and_the_pod_stays_pending(tenant: Tenant) -> None:
    def sh(name: str, script: str) -> dict[str, Any]:
        return {"name": name, "image": "busybox", "command": ["sh", "-c", script]}

    tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "crashing"},
        "spec": {"schedulerName": "volcano", "restartPolicy": "OnFailure",
                 "initContainers": [sh("ok", "true"), sh("bad", "exit 1")], "containers": [sh("main", "sleep 1")]}})
    url = f"/api/v1/namespaces/{tenant.namespace}/pods/crashing"

    def restarted() -> bool:
        inits = {c["name"]: c for c in (tenant.kube.get(url).get("status") or {}).get("initContainerStatuses") or []}
        return inits.get("bad", {}).get("restartCount", 0) >= 1

    wait_for(restarted, "the failing init container restarted")
    status = tenant.kube.get(url)["status"]
    assert status["phase"] == "Pending", status
    bad = next(c for c in status["initContainerStatuses"] if c["name"] == "bad")
    assert bad["lastState"]["terminated"]["exitCode"] == 1
