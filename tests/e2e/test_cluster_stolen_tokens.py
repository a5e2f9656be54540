"""A stolen token can do no more than its component does: each component's own token tries on
the real apiserver what a thief would, and the ValidatingAdmissionPolicies of daemonset/
refuse it; what the component needs (the same verb on its own fields) still passes. Every
write is a dry run (dryRun=All): admission runs in full, nothing is stored."""

from __future__ import annotations

import http.client
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from central.kube.client import ApiError, KubeClient
from nodeagent.podwatch import WatchPodSource
from tests.e2e.conftest import Tenant, as_token, volcano_job, wait_for

pytestmark = pytest.mark.e2e

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"


def component(tenant: Tenant, name: str) -> KubeClient:
    if name == "agent":
        return as_token(tenant, tenant.cluster.dir / "nodes" / "node-1" / "kube-token")
    return KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / f"caldera-{name}"))


def dry(client: KubeClient, method: str, url: str, body: Any, content_type: str | None = MERGE) -> dict[str, Any]:
    return client.request(method, url, query={"dryRun": "All"}, body=body,
                          content_type=content_type if method == "PATCH" else None)


def refused(call: Callable[[], Any], policy: str) -> None:
    with pytest.raises(ApiError) as err:
        call()
    assert err.value.code == 403 and policy in err.value.message, err.value


def parked_pod(tenant: Tenant, name: str, namespace: str | None = None) -> str:
    """A pod no scheduler takes (so it stays as created); its URL."""
    ns = namespace or tenant.namespace
    tenant.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "victim"}},
        "spec": {"schedulerName": "nobody", "serviceAccountName": "default",
                 "containers": [{"name": "main", "image": "busybox"}]}})
    return f"/api/v1/namespaces/{ns}/pods/{name}"


def test_every_policy_type_checks(tenant: Tenant) -> None:
    """A CEL expression that does not compile is only a warning on the policy, and a runtime
    error fails closed: either would refuse the components' own writes."""
    policies = [p for p in tenant.kube.get(POLICIES)["items"] if p["metadata"]["name"].startswith("caldera-")]
    assert len(policies) >= 8
    warnings = {p["metadata"]["name"]: w for p in policies
                if (w := ((p.get("status") or {}).get("typeChecking") or {}).get("expressionWarnings"))}
    assert not warnings, warnings


def test_a_stolen_scheduler_token_cannot_rewrite_pods(tenant: Tenant) -> None:
    scheduler = component(tenant, "scheduler")
    url = parked_pod(tenant, "victim")
    policy = "caldera-scheduler-pods"
    refused(lambda: dry(scheduler, "PATCH", url, {"spec": {"containers": [{"name": "main", "image": "evil"}]}},
                        STRATEGIC), policy)
    refused(lambda: dry(scheduler, "PATCH", url, {"metadata": {"labels": {"app": "other"}}}), policy)
    refused(lambda: dry(scheduler, "PATCH", url, {"metadata": {"annotations": {"owner": "thief"}}}), policy)
    refused(lambda: dry(scheduler, "PATCH", url, {"metadata": {"finalizers": ["thief.example/hold"]}}), policy)
    refused(lambda: dry(scheduler, "PATCH", f"{url}/status", {"status": {"phase": "Failed"}}), policy)
    refused(lambda: dry(scheduler, "PATCH", f"{url}/status", {"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}}, STRATEGIC), policy)
    # what the scheduler does: the annotations its plugins choose, PodScheduled, nominatedNodeName
    dry(scheduler, "PATCH", url, {"metadata": {"annotations": {"caldera.sh/cpuset": "0-3", "volcano.sh/gpu-index": "1"}}})
    dry(scheduler, "PATCH", f"{url}/status", {"status": {"nominatedNodeName": "node-1", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "why"}]}}, STRATEGIC)


def test_a_stolen_scheduler_token_removes_no_scheduling_gate_but_the_queue_gate(tenant: Tenant) -> None:
    scheduler = component(tenant, "scheduler")
    ours, other = "scheduling.volcano.sh/queue-allocation-gate", "example.com/other-gate"
    url = f"/api/v1/namespaces/{tenant.namespace}/pods/gated"
    tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
        "spec": {"schedulerName": "nobody", "schedulingGates": [{"name": ours}, {"name": other}],
                 "containers": [{"name": "main", "image": "busybox"}]}})
    policy = "caldera-scheduler-pods"
    refused(lambda: dry(scheduler, "PATCH", url, {"spec": {"schedulingGates": [{"name": other, "$patch": "delete"}]}},
                        STRATEGIC), policy)
    refused(lambda: dry(scheduler, "PATCH", url, {"spec": {"schedulingGates": [
        {"name": ours, "$patch": "delete"}], "activeDeadlineSeconds": 5}}, STRATEGIC), policy)
    left = dry(scheduler, "PATCH", url, {"spec": {"schedulingGates": [{"name": ours, "$patch": "delete"}]}}, STRATEGIC)
    assert left["spec"]["schedulingGates"] == [{"name": other}]


def test_a_stolen_scheduler_token_cannot_break_nodes_or_evict_system_pods(tenant: Tenant) -> None:
    scheduler = component(tenant, "scheduler")
    node = "/api/v1/nodes/node-2/status"
    policy = "caldera-scheduler-node-status"
    refused(lambda: dry(scheduler, "PATCH", node, {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "Thief"}]}}, STRATEGIC), policy)
    refused(lambda: dry(scheduler, "PATCH", node, {"status": {"allocatable": {"cpu": "0"}}}), policy)
    refused(lambda: dry(scheduler, "PATCH", node, {"status": {"capacity": {"pods": "0"}}}), policy)
    dry(scheduler, "PATCH", node, {"status": {"capacity": {"kubernetes.io/batch-cpu": "1000"},
                                              "allocatable": {"kubernetes.io/batch-cpu": "1000"}}})
    url = parked_pod(tenant, f"victim-{tenant.namespace}"[:63], "kube-system")
    try:
        refused(lambda: dry(scheduler, "POST", f"{url}/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": url.rsplit("/", 1)[1], "namespace": "kube-system"}}), "caldera-scheduler-evictions")
    finally:
        tenant.kube.delete(url)


def test_a_stolen_scheduler_token_binds_volumes_and_nothing_more(tenant: Tenant) -> None:
    scheduler = component(tenant, "scheduler")
    ns = tenant.namespace
    claim = f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data"
    tenant.create(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "none", "resources": {"requests": {"storage": "1Gi"}}}})
    volume = f"/api/v1/persistentvolumes/held-{ns}"
    tenant.create("/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"held-{ns}"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "none",
                 "hostPath": {"path": f"/tmp/{ns}"}}})
    try:
        policy = "caldera-scheduler-claims"
        refused(lambda: dry(scheduler, "PATCH", claim, {"metadata": {"annotations": {"owner": "thief"}}}), policy)
        refused(lambda: dry(scheduler, "PATCH", claim, {"metadata": {"labels": {"owner": "thief"}}}), policy)
        dry(scheduler, "PATCH", claim, {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-1"}}})
        policy = "caldera-scheduler-volumes"
        ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": "data"}
        refused(lambda: dry(scheduler, "PATCH", volume, {"spec": {"claimRef": ref, "storageClassName": "other"}}), policy)
        refused(lambda: dry(scheduler, "PATCH", volume, {"spec": {"persistentVolumeReclaimPolicy": "Delete"}}), policy)
        dry(scheduler, "PATCH", volume, {"metadata": {"annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
                                         "spec": {"claimRef": ref}})
    finally:
        tenant.kube.delete(volume)


def test_a_stolen_controllers_token_creates_nothing_a_job_does_not_own(tenant: Tenant) -> None:
    controllers = component(tenant, "controllers")
    ns = tenant.namespace
    policy = "caldera-controllers-job-objects"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "thief"},
           "spec": {"serviceAccountName": "default", "containers": [{"name": "main", "image": "evil"}]}}
    refused(lambda: dry(controllers, "POST", "/api/v1/namespaces/kube-system/pods", pod), policy)
    refused(lambda: dry(controllers, "POST", f"/api/v1/namespaces/{ns}/pods", pod), policy)
    owned = {**pod, "metadata": {"name": "thief", "ownerReferences": [{
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "any", "uid": "0" * 8, "controller": True}]}}
    refused(lambda: dry(controllers, "POST", "/api/v1/namespaces/kube-system/pods", owned), policy)
    refused(lambda: dry(controllers, "POST", f"/api/v1/namespaces/{ns}/secrets",
                        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "thief"}}), policy)
    service = tenant.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "tenant"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "tenant"}}})
    service["spec"]["selector"] = {"app": "thief"}
    refused(lambda: dry(controllers, "PUT", f"/api/v1/namespaces/{ns}/services/tenant", service), policy)
    refused(lambda: dry(controllers, "DELETE", f"/api/v1/namespaces/{ns}/services/tenant", None), policy)
    tenant.create(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny-all"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})
    refused(lambda: dry(controllers, "DELETE", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies/deny-all",
                        None), policy)
    url = parked_pod(tenant, "bare")
    refused(lambda: dry(controllers, "PATCH", url, {"metadata": {"labels": {"app": "other"}}}),
            "caldera-controllers-pod-updates")
    refused(lambda: dry(controllers, "PATCH", url, {"spec": {"activeDeadlineSeconds": 1}}), "caldera-controllers-pod-updates")
    dry(controllers, "PATCH", url, {"metadata": {"annotations": {"scheduling.k8s.io/group-name": "podgroup-bare",
                                                                 "volcano.sh/controller-out-of-sync": "true"}}})


def test_a_stolen_controllers_token_cannot_forge_an_owner(tenant: Tenant) -> None:
    """A policy sees the ownerReference only; the webhook looks its Job up: a uid that is not
    the Job's, or a Job that does not exist, is refused, and a real Job's pod still passes."""
    controllers = component(tenant, "controllers")
    ns, webhook = tenant.namespace, "validatecontrollerowners.caldera.sh"
    job = tenant.create(tenant.jobs, volcano_job("owner", tenant.queue, replicas=1))

    def owned_by(name: str, uid: str, kind: str = "Job", api: str = "batch.volcano.sh/v1alpha1") -> dict[str, Any]:
        return {"metadata": {"name": "thief", "ownerReferences": [
            {"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": True}]}}

    pod = {"apiVersion": "v1", "kind": "Pod",
           "spec": {"serviceAccountName": "default", "containers": [{"name": "main", "image": "evil"}]}}
    forged = "00000000-0000-0000-0000-000000000000"
    refused(lambda: dry(controllers, "POST", f"/api/v1/namespaces/{ns}/pods", {**pod, **owned_by("owner", forged)}),
            webhook)
    refused(lambda: dry(controllers, "POST", f"/api/v1/namespaces/{ns}/pods", {**pod, **owned_by("gone", forged)}),
            webhook)
    refused(lambda: dry(controllers, "POST", f"/api/v1/namespaces/{ns}/secrets",
                        {"apiVersion": "v1", "kind": "Secret", **owned_by("owner", forged)}), webhook)
    refused(lambda: dry(controllers, "POST", tenant.jobs, {**volcano_job("thief", tenant.queue, replicas=1),
                                                          **owned_by("nightly", forged, "CronJob")}), webhook)
    # what the controllers do: a Job's pod (of one of its tasks, as that task's ServiceAccount) and
    # its plugins' objects, named by the Job's uid; the same pod as another account is refused
    uid = job["metadata"]["uid"]
    own = owned_by("owner", uid)
    own["metadata"]["annotations"] = {"volcano.sh/task-spec": "worker"}
    dry(controllers, "POST", f"/api/v1/namespaces/{ns}/pods", {**pod, **own})
    tenant.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "admin"}})
    as_admin = {**pod, "spec": {**pod["spec"], "serviceAccountName": "admin"}}
    refused(lambda: dry(controllers, "POST", f"/api/v1/namespaces/{ns}/pods", {**as_admin, **own}), webhook)
    dry(controllers, "POST", f"/api/v1/namespaces/{ns}/secrets",
        {"apiVersion": "v1", "kind": "Secret", **owned_by("owner", uid)})


def test_a_stolen_webhook_token_cannot_widen_its_webhooks(tenant: Tenant) -> None:
    webhook = component(tenant, "admission")
    url = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/caldera-validate"
    policy = "caldera-admission-own-validating-webhooks"

    def changed(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        config = tenant.kube.get(url)
        edit(config)
        return config

    def ignore(c: dict[str, Any]) -> None:
        c["webhooks"][0]["failurePolicy"] = "Ignore"

    def everything(c: dict[str, Any]) -> None:
        c["webhooks"][0]["rules"] = [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"]}]

    def always(c: dict[str, Any]) -> None:
        pods = next(w for w in c["webhooks"] if w["name"] == "validatepod.caldera.sh")
        pods["matchConditions"][0]["expression"] = "true"

    def smuggled(c: dict[str, Any]) -> None:
        pods = next(w for w in c["webhooks"] if w["name"] == "validatepod.caldera.sh")
        old = pods["matchConditions"][0]["expression"]
        pods["matchConditions"][0]["expression"] = "object.spec.schedulerName == 'x' || true" + old[old.index(" ||"):]

    def elsewhere(c: dict[str, Any]) -> None:
        c["webhooks"][0]["clientConfig"] = {"url": "https://thief.example/validate", "caBundle": "LS0t"}

    for edit in (ignore, everything, always, smuggled, elsewhere):
        refused(lambda: dry(webhook, "PUT", url, changed(edit)), policy)

    def new_ca(c: dict[str, Any]) -> None:
        for w in c["webhooks"]:
            w["clientConfig"]["caBundle"] = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="

    def renamed(c: dict[str, Any]) -> None:
        pods = next(w for w in c["webhooks"] if w["name"] == "validatepod.caldera.sh")
        old = pods["matchConditions"][0]["expression"]
        pods["matchConditions"][0]["expression"] = "object.spec.schedulerName == 'batch-2'" + old[old.index(" ||"):]

    dry(webhook, "PUT", url, changed(new_ca))
    dry(webhook, "PUT", url, changed(renamed))


def test_a_stolen_agent_token_cannot_relax_its_own_node(tenant: Tenant) -> None:
    agent = component(tenant, "agent")
    url = "/api/v1/nodes/node-1"
    policy = "caldera-nodeagent-own-node"
    refused(lambda: dry(agent, "PATCH", url, {"metadata": {"labels": {
        "node-restriction.kubernetes.io/trusted": "true"}}}), policy)
    refused(lambda: dry(agent, "PATCH", url, {"metadata": {"labels": {"kubernetes.io/hostname": "node-2"}}}), policy)
    refused(lambda: dry(agent, "PATCH", url, {"spec": {"taints": [{"key": "other", "effect": "NoExecute"}]}}), policy)
    refused(lambda: dry(agent, "PATCH", url, {"spec": {"unschedulable": True}}), policy)
    refused(lambda: dry(agent, "PATCH", "/api/v1/nodes/node-2", {"metadata": {"labels": {"caldera.sh/x": "y"}}}), policy)
    # what the agent does: its eviction taint, and Caldera's own labels
    dry(agent, "PATCH", url, {"spec": {"taints": [{"key": "volcano.sh/offline-job-evicting", "effect": "NoSchedule"}]}})
    dry(agent, "PATCH", url, {"metadata": {"labels": {"caldera.sh/qos": "on"}}})


def test_a_stolen_agent_token_lists_only_its_own_nodes_pods(tenant: Tenant) -> None:
    """RBAC cannot require a field selector; the agents' authorization webhook does. With the
    agent's own token: its node's pods list, with no selector or another node's it is refused,
    no read by name, nothing else readable; and the agent itself asks only for its node's pods."""
    agent = component(tenant, "agent")
    ns = tenant.namespace
    for node in ("node-1", "node-2"):
        tenant.create(f"/api/v1/namespaces/{ns}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"on-{node}"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]}})
    mine = {"fieldSelector": "spec.nodeName=node-1"}
    listed = agent.request("GET", "/api/v1/pods", query=mine)["items"]
    assert {p["metadata"]["name"] for p in listed if p["metadata"]["namespace"] == ns} == {"on-node-1"}
    assert agent.request("GET", f"/api/v1/namespaces/{ns}/pods", query=mine)["items"]
    for url, query in (("/api/v1/pods", {}), ("/api/v1/pods", {"fieldSelector": "spec.nodeName=node-2"}),
                       ("/api/v1/pods", {"fieldSelector": "spec.nodeName!=node-1"}),
                       ("/api/v1/pods", {"fieldSelector": "spec.nodeName=node-2", "watch": "true"}),
                       (f"/api/v1/namespaces/{ns}/pods", {"fieldSelector": "spec.nodeName=node-2"})):
        with pytest.raises(ApiError) as err:
            agent.request("GET", url, query=query)
        assert err.value.code == 403, (url, query)
    with pytest.raises(ApiError) as err:
        agent.get(f"/api/v1/namespaces/{ns}/pods/on-node-2")
    assert err.value.code == 403
    for url in ("/api/v1/secrets", "/api/v1/configmaps", f"/api/v1/namespaces/{ns}/serviceaccounts"):
        with pytest.raises(ApiError) as err:
            agent.get(url)
        assert err.value.code == 403, url
    assert not tenant.kube.get_or_none("/apis/rbac.authorization.k8s.io/v1/clusterroles/caldera-nodeagent-list-pods")

    asked: list[str] = []

    def recording(request: urllib.request.Request, **kwargs: Any) -> Any:
        asked.append(request.full_url)
        return urllib.request.urlopen(request, **kwargs)

    cluster = tenant.cluster
    source = WatchPodSource(cluster.server, "node-1", cluster.dir / "nodes" / "node-1" / "kube-token",
                            cluster.dir / "pki" / "ca.crt", opener=recording)
    try:
        def mine() -> set[str] | None:
            try:
                names = {p.name for p in source.pods() if p.namespace == ns}
            except RuntimeError:  # not in sync yet
                return None
            return names or None
        assert wait_for(mine, "the agent's watch lists its node's pod") == {"on-node-1"}
    finally:
        source.close()
    selector = "fieldSelector=" + urllib.parse.quote("spec.nodeName=node-1")
    assert asked and all(selector in url for url in asked), asked


def test_the_webhook_answers_only_the_api_server(tenant: Tenant) -> None:
    """The webhook asks for a client certificate that only the API server holds: a plain client
    (curl, a stolen token) is refused at the TLS handshake, while the API server's admission
    calls go through (a Job too big is refused by the webhook, with its message)."""
    port = tenant.cluster.ports["caldera-admission:--port"]
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # only the client's side is under test
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        try:
            connection.request("POST", "/authorize/agent-pods", body=b"{}")
            connection.getresponse()
        finally:
            connection.close()
    huge = volcano_job("huge", tenant.queue, replicas=10**6)
    with pytest.raises(ApiError) as err:
        dry(tenant.kube, "POST", tenant.jobs, huge)
    assert "denied the request" in err.value.message and "replicas" in err.value.message, err.value
