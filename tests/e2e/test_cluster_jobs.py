"""Volcano Jobs on a real kube-apiserver: admission through the apiserver's chain, the job
lifecycle with the real job, PodGroup and queue controllers, and the simulated kubelets."""

from __future__ import annotations

from typing import Any

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


def test_webhook_denials_carry_volcanos_messages(tenant: Tenant) -> None:
    """Through the API server's admission chain, each denial holds Volcano's text for the case."""
    def job_with(**spec: Any) -> dict[str, Any]:
        return volcano_job("denied", tenant.queue, extra_spec=spec)

    pods = f"/api/v1/namespaces/{tenant.namespace}/pods"
    budget = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "budget", "annotations": {
        "volcano.sh/jdb-min-available": "2", "volcano.sh/jdb-max-unavailable": "50%"}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]}}
    guarantee_only = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                      "metadata": {"name": f"{tenant.queue}-g"},
                      "spec": {"weight": 1, "guarantee": {"resource": {"cpu": "1"}}}}
    cases = [
        (tenant.jobs, job_with(minAvailable=5), "job 'minAvailable' should not be greater than total replicas in tasks"),
        (tenant.jobs, job_with(policies=[{"event": "PodFailed", "action": "AbortJob"},
                                         {"event": "PodFailed", "action": "RestartJob"}]),
         "duplicate event PodFailed  across different policy"),
        (tenant.jobs, job_with(policies=[{"action": "AbortJob"}]), "either event and exitCode should be specified"),
        (tenant.jobs, job_with(volumes=[{"mountPath": "/var"}]), "either VolumeClaim or VolumeClaimName must be specified"),
        (pods, budget, "not allow configure multiple annotations at same time"),
        ("/apis/scheduling.volcano.sh/v1beta1/queues", guarantee_only, "must be >= guarantee"),
    ]
    for url, body, text in cases:
        with pytest.raises(ApiError) as refused:
            tenant.create(url, body)
        assert text in refused.value.message, (text, refused.value.message)


def test_job_plugin_flags_volcano_ignores_are_admitted_and_run(tenant: Tenant) -> None:
    """Volcano's suites pass `ssh --no-root` and `svc --enable-networking`; its plugins skip them."""
    job = volcano_job("flags", tenant.queue, replicas=2, duration="60s",
                      extra_spec={"plugins": {"ssh": ["--no-root"], "svc": ["--enable-networking"]}})
    tenant.submit(job)
    wait_for(lambda: len(tenant.pods()) == 2, "the Job's pods created")
    assert all(p["spec"].get("subdomain") == "flags" for p in tenant.pods())  # svc still did its work


def test_queue_holding_a_podgroup_can_be_deleted(tenant: Tenant) -> None:
    """Volcano refuses deleting root, default and a parent queue, not a queue with PodGroups."""
    queues = "/apis/scheduling.volcano.sh/v1beta1/queues"
    name = f"{tenant.queue}-gone"
    tenant.create(queues, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": name}, "spec": {"weight": 1}})
    wait_for(lambda: (tenant.kube.get(f"{queues}/{name}").get("status") or {}).get("state") == "Open", "the queue Open")
    tenant.create(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{tenant.namespace}/podgroups", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "waiting"},
        "spec": {"minMember": 1, "queue": name}})
    tenant.kube.delete(f"{queues}/{name}")
    wait_for(lambda: tenant.kube.get_or_none(f"{queues}/{name}") is None, "the queue gone")
    with pytest.raises(ApiError) as kept:
        tenant.kube.delete(f"{queues}/default")
    assert "`default` queue can not be deleted" in kept.value.message


def test_a_jobs_unprefixed_sla_waiting_time_reaches_its_podgroup(tenant: Tenant) -> None:
    job = volcano_job("sla", tenant.queue, replicas=1, duration="60s")
    job["metadata"]["annotations"] = {"sla-waiting-time": "5m"}
    tenant.submit(job)
    pg = wait_for(lambda: tenant.job_podgroup("sla"), "the Job's PodGroup")
    assert pg["metadata"]["annotations"].get("sla-waiting-time") == "5m"


def test_a_podgroup_turning_unknown_raises_the_jobs_unknown_event(tenant: Tenant) -> None:
    """The PodGroup's status is written Unknown as the scheduler writes it when part of a running
    gang turns unschedulable; the job's `Unknown -> AbortJob` policy fires, as in Volcano."""
    tenant.submit(volcano_job("gang", tenant.queue, replicas=1, duration="600s",
                              policies=[{"event": "Unknown", "action": "AbortJob"}]))
    wait_for(lambda: tenant.phase("gang") == "Running", "the Job Running")
    name = tenant.job_podgroup("gang")["metadata"]["name"]
    tenant.kube.merge_patch(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{tenant.namespace}/podgroups/{name}",
                            {"status": {"phase": "Unknown"}})
    wait_for(lambda: tenant.phase("gang") in ("Aborting", "Aborted"), "the Job aborted on its Unknown event")


def test_a_job_scaled_to_zero_keeps_its_phase_and_svc_configmap(tenant: Tenant) -> None:
    tenant.submit(volcano_job("scaled", tenant.queue, replicas=2, duration="600s", extra_spec={"plugins": {"svc": []}}))
    wait_for(lambda: tenant.phase("scaled") == "Running", "the Job Running")
    job = tenant.job("scaled")
    tasks = [dict(t, replicas=0, minAvailable=0) for t in job["spec"]["tasks"]]
    tenant.kube.merge_patch(f"{tenant.jobs}/scaled", {"spec": {"minAvailable": 0, "tasks": tasks}})
    wait_for(lambda: tenant.pods() == [], "the pods gone")
    configmap = f"/api/v1/namespaces/{tenant.namespace}/configmaps/scaled-svc"
    for _ in range(3):  # a few more syncs of the job: still Running, its ConfigMap kept
        wait_for(lambda: tenant.kube.get_or_none(configmap) is not None, "the svc ConfigMap")
        assert tenant.phase("scaled") == "Running"


def test_a_scaled_jobs_svc_configmap_is_rewritten_in_place(tenant: Tenant) -> None:
    """With the controllers' own token: an update the policy allows (a Job controls the
    ConfigMap and stays its owner), so the host lists never go missing for a moment."""
    tenant.submit(volcano_job("resized", tenant.queue, replicas=2, duration="600s", extra_spec={"plugins": {"svc": []}}))
    wait_for(lambda: tenant.phase("resized") == "Running", "the Job Running")
    url = f"/api/v1/namespaces/{tenant.namespace}/configmaps/resized-svc"
    before = tenant.kube.get(url)
    tasks = [dict(t, replicas=1, minAvailable=1) for t in tenant.job("resized")["spec"]["tasks"]]
    tenant.kube.merge_patch(f"{tenant.jobs}/resized", {"spec": {"minAvailable": 1, "tasks": tasks}})
    wait_for(lambda: tenant.kube.get(url)["data"] != before["data"], "the host lists rewritten")
    assert tenant.kube.get(url)["metadata"]["uid"] == before["metadata"]["uid"]  # updated, never deleted


def test_a_replicaset_scaled_to_zero_loses_its_podgroup(tenant: Tenant) -> None:
    """A Deployment's old ReplicaSet at 0 replicas: Volcano deletes its `podgroup-<rs uid>`."""
    replicasets = f"/apis/apps/v1/namespaces/{tenant.namespace}/replicasets"
    labels = {"app": "web"}
    rs = tenant.create(replicasets, {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
                                     "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                                         "metadata": {"labels": labels, "annotations": {"sim.caldera.sh/duration": "600s"}},
                                         "spec": {"schedulerName": "volcano", "containers": [
                                             {"name": "c", "image": "busybox",
                                              "resources": {"requests": {"cpu": "100m"}}}]}}}})
    group = f"podgroup-{rs['metadata']['uid']}"
    wait_for(lambda: tenant.podgroup(group) is not None, "the ReplicaSet's PodGroup")
    tenant.kube.merge_patch(f"{replicasets}/web", {"spec": {"replicas": 0}})
    wait_for(lambda: tenant.podgroup(group) is None, "the PodGroup deleted")


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
