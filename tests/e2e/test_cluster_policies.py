"""What RBAC cannot say, enforced on the real apiserver: the admission policies of
daemonset/policies.yaml and the webhook's check of the agents' evictions."""

from __future__ import annotations

import pytest

from central.kube.client import ApiError, KubeClient
from tests.e2e.conftest import Tenant, as_token, volcano_job, wait_for

pytestmark = pytest.mark.e2e


def _secret(name: str, owner: dict | None) -> dict:
    meta: dict = {"name": name}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True}]  # as the Job controller's plugins write it
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {}}


def test_the_controllers_write_only_secrets_a_volcano_job_owns(tenant: Tenant) -> None:
    controllers = KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / "caldera-controllers"))
    url = f"/api/v1/namespaces/{tenant.namespace}/secrets"
    with pytest.raises(ApiError) as refused:
        controllers.create(url, _secret("not-a-jobs", None))
    assert refused.value.code in (403, 422) and "a Volcano Job controls" in refused.value.message
    job = tenant.create(f"/apis/batch.volcano.sh/v1alpha1/namespaces/{tenant.namespace}/jobs",
                        volcano_job("owner", tenant.queue, replicas=1))
    controllers.create(url, _secret("owner-extra", job))
    controllers.delete(f"{url}/owner-extra")
    tenant.create(url, _secret("admins", None))  # someone else's: the controllers may not delete it
    with pytest.raises(ApiError) as kept:
        controllers.delete(f"{url}/admins")
    assert kept.value.code in (403, 422)


def test_an_agent_evicts_only_pods_on_its_own_node(tenant: Tenant) -> None:
    pods = f"/api/v1/namespaces/{tenant.namespace}/pods"
    for node in ("node-1", "node-2"):
        tenant.create(pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"on-{node}"},
                             "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
    agent = as_token(tenant, tenant.cluster.dir / "nodes" / "node-1" / "kube-token")

    def evict(name: str) -> dict:
        return agent.create(f"{pods}/{name}/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": tenant.namespace}})

    with pytest.raises(ApiError) as refused:
        evict("on-node-2")
    assert refused.value.code == 403 and "may not evict" in refused.value.message
    evict("on-node-1")
    wait_for(lambda: (pod := tenant.kube.get_or_none(f"{pods}/on-node-1")) is None
             or pod["metadata"].get("deletionTimestamp"), "the eviction")  # one read: gone between two is a pass


@pytest.mark.parametrize("token, node, refusal", [
    pytest.param("scheduler-identity/token", "node-2", "PERMISSION_DENIED", id="node-1s-token-for-node-2"),
    pytest.param("kube-token", "node-1", "UNAUTHENTICATED", id="a-token-for-the-api-server"),
])
def test_the_scheduler_takes_reports_only_for_the_node_a_token_names(tenant: Tenant, token, node, refusal) -> None:
    import threading

    from nodeagent.report import sections
    from nodeagent.stream import ReportStream, TlsFiles
    from tests.agents.reports import snapshot

    identity = tenant.cluster.dir / "pods" / "caldera-nodeagent-node-1" / "scheduler-identity"
    node_1 = tenant.cluster.dir / "nodes" / "node-1"
    token_file = identity / "token" if token.startswith("scheduler") else node_1 / token
    port = tenant.cluster.ports["caldera-scheduler:--agent-address"]
    stream = ReportStream(f"127.0.0.1:{port}", node, token_file=token_file, backoff_base_s=0.2, backoff_max_s=0.5,
                          tls=TlsFiles(identity / "ca.crt", server_name="caldera-scheduler.caldera-system.svc"))
    stream.offer(sections(snapshot(1.0)))
    stop = threading.Event()
    thread = threading.Thread(target=stream.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: stream.stats.refused, f"the scheduler refusing a {token} reporting {node}")
        assert stream.stats.refused.startswith(refusal) and stream.stats.acked == 0
    finally:
        stop.set()
        thread.join(10)
