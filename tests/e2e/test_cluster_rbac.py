"""Each component's ServiceAccount can do what it needs (the other e2e tests prove that by
working) and is refused what it must not, by the real apiserver's RBAC and admission policies."""

from __future__ import annotations

import pytest

from central.kube.client import ApiError, KubeClient
from tests.e2e.conftest import Tenant, as_token, volcano_job, wait_for

pytestmark = pytest.mark.e2e


def test_an_agent_may_patch_only_its_own_node(tenant: Tenant) -> None:
    agent = as_token(tenant, tenant.cluster.dir / "nodes" / "node-1" / "kube-token")
    label = {"metadata": {"labels": {"caldera.sh/e2e-touched": tenant.namespace[:60]}}}
    agent.merge_patch("/api/v1/nodes/node-1", label)
    with pytest.raises(ApiError) as refused:
        agent.merge_patch("/api/v1/nodes/node-2", label)
    assert refused.value.code in (403, 422), refused.value


def test_the_scheduler_may_not_write_a_job_spec(tenant: Tenant) -> None:
    url = tenant.jobs
    tenant.submit(volcano_job("mine", tenant.queue, replicas=1))
    scheduler = KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / "caldera-scheduler"))
    wait_for(lambda: tenant.job_podgroup("mine"), "the job's PodGroup")
    with pytest.raises(ApiError) as refused:
        scheduler.merge_patch(f"{url}/mine", {"spec": {"maxRetry": 9}})
    assert refused.value.code == 403
    with pytest.raises(ApiError) as secrets:
        scheduler.get(f"/api/v1/namespaces/{tenant.namespace}/secrets")
    assert secrets.value.code == 403


def test_the_controllers_may_not_read_secrets(tenant: Tenant) -> None:
    controllers = KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / "caldera-controllers"))
    with pytest.raises(ApiError) as refused:
        controllers.get("/api/v1/namespaces/caldera-system/secrets/caldera-admission-tls")
    assert refused.value.code == 403


def test_an_agent_may_evict_only_pods_on_its_own_node(tenant: Tenant) -> None:
    ns = tenant.namespace
    for name, node in (("here", "node-1"), ("there", "node-2")):
        tenant.create(f"/api/v1/namespaces/{ns}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": "volcano", "nodeSelector": {"kubernetes.io/hostname": node},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
    wait_for(lambda: all(p["spec"].get("nodeName") for p in tenant.pods()) and len(tenant.pods()) == 2, "both bound")
    agent = as_token(tenant, tenant.cluster.dir / "nodes" / "node-1" / "kube-token")

    def evict(name: str) -> None:
        agent.create(f"/api/v1/namespaces/{ns}/pods/{name}/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}})

    with pytest.raises(ApiError) as refused:
        evict("there")
    assert refused.value.code in (400, 403), refused.value
    evict("here")
    wait_for(lambda: [p["metadata"]["name"] for p in tenant.pods()] == ["there"], "only the pod on node-1 evicted")


def test_the_components_requests_go_to_kube_schedulers_priority_levels(tenant: Tenant) -> None:
    """API Priority and Fairness: Lease renewals in leader-election, every other request in
    workload-high, not workload-low behind every service account (the API server names the
    FlowSchema that classified a request in a response header)."""
    schemas = {o["metadata"]["uid"]: o["metadata"]["name"]
               for o in tenant.kube.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")["items"]}

    def schema(client: KubeClient, url: str) -> str:
        response = client._call("GET", url, None, None, None, 10.0)
        response.release_conn()
        return schemas.get(response.headers.get("X-Kubernetes-PF-FlowSchema-UID", ""), "none")

    leases = "/apis/coordination.k8s.io/v1/namespaces/caldera-system/leases"
    for name, lease in (("caldera-scheduler", "vc-scheduler"), ("caldera-controllers", "vc-controller-manager")):
        component = KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / name))
        assert schema(component, f"{leases}/{lease}") == "caldera-leader-election", name
        assert schema(component, f"/api/v1/namespaces/{tenant.namespace}/pods") == "caldera-components", name
    agent = as_token(tenant, tenant.cluster.dir / "nodes" / "node-1" / "kube-token")
    assert schema(agent, "/api/v1/nodes/node-1") == "service-accounts"  # the agents stay where they were
