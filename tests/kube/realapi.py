"""Fixtures for the adapter's tests on a real kube-apiserver: one bare control plane per
session (etcd, kube-apiserver, kube-controller-manager, Caldera's CRDs; no Caldera process
runs in it), the fault proxy in front of it, and a namespace per test."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from central.kube.client import ApiError, KubeClient
from central.localcluster import build, controlplane
from central.localcluster.install import Discovery, apply, apply_crds, kustomization_objects, repo_manifests, service_account_token
from central.localcluster.pki import Pair
from central.localcluster.processes import Supervisor
from tests.kube.faultproxy import FaultProxy
from tests.waiting import eventually

# No kubelet posts Node status here, so the node lifecycle controller would taint every Node
# unreachable once its start-up grace (1 min) ran out; and tests recreate the same names
# (n1, n2) faster than its 5 s sweep notices a deletion, so a new n1 inherits the old one's
# first sighting and is tainted within seconds, some minutes into a session. Without it,
# `Api.put` lifts the not-ready taint admission gives a new Node, as that controller would.
BARE_CONTROLLERS = f"{controlplane.CONTROLLERS},-node-lifecycle-controller"

_RBAC_KINDS = {"Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}


@dataclass
class RealApi:
    server: str
    dir: Path
    proxy: FaultProxy

    @property
    def ca(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    rbac_applied: bool = False

    def admin(self) -> KubeClient:
        return KubeClient.connect(str(self.dir / "kubeconfig"), qps=1000, burst=1000)

    def apply_rbac(self) -> None:
        """daemonset/'s namespace, ServiceAccounts and RBAC, as installed (once a session; no
        webhook configuration, as no webhook serves here)."""
        if self.rbac_applied:
            return
        admin = self.admin()
        discovery = Discovery(admin)
        for obj in kustomization_objects(repo_manifests()):
            if obj["kind"] in _RBAC_KINDS:
                apply(admin, discovery, obj)
        self.rbac_applied = True


@pytest.fixture(scope="session")
def real_api(tmp_path_factory) -> Iterator[RealApi]:
    why = build.unavailable()
    if why:
        pytest.skip(f"no real kube-apiserver here: {why}")
    directory = tmp_path_factory.mktemp("realapi")
    sup = Supervisor(directory)
    try:
        endpoints = controlplane.start(sup, build.binaries(), controllers=BARE_CONTROLLERS)
        admin = KubeClient.connect(str(directory / "kubeconfig"), qps=1000, burst=1000)
        apply_crds(admin)
        pkidir = directory / "pki"
        proxy = FaultProxy(endpoints.apiserver, Pair(pkidir / "ca.crt", pkidir / "ca.key"),
                           Pair(pkidir / "admin.crt", pkidir / "admin.key"), pkidir)
        yield RealApi(endpoints.apiserver, directory, proxy)
        proxy.stop()
    finally:
        sup.stop_all()


@dataclass
class Api:
    """One test's view: its namespace, a client through the fault proxy, the proxy."""

    real: RealApi
    namespace: str
    kube: KubeClient  # through the proxy
    admin: KubeClient  # straight to the apiserver

    discovery: Discovery
    kubeconfig: str  # for a process: through the proxy, as the admin

    @property
    def proxy(self) -> FaultProxy:
        return self.real.proxy

    def url(self, api_version: str, kind: str, name: str | None = None) -> str:
        """The object's path, in this test's namespace where the kind is namespaced."""
        collection = self.discovery.collection(api_version, kind, self.namespace)
        return f"{collection}/{name}" if name else collection

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create `obj` (in this test's namespace where namespaced) and write the status it
        carries, which a create ignores where the kind has a status subresource: the test
        plays the kubelet or the controller that would have written it (a Node keeps only
        the taints it was written with)."""
        obj = copy.deepcopy(obj)
        if obj["metadata"].get("namespace") is not None or self._namespaced(obj):
            obj["metadata"]["namespace"] = self.namespace
        url = self.url(obj["apiVersion"], obj["kind"])
        stored = self.admin.create(url, obj)
        if obj["kind"] == "Node" and stored["spec"].get("taints") != obj.get("spec", {}).get("taints"):
            stored = self.admin.merge_patch(f"{url}/{obj['metadata']['name']}",
                                            {"spec": {"taints": obj.get("spec", {}).get("taints")}})
        if obj.get("status") and stored.get("status") != obj["status"]:
            # a merge patch: it leaves alone what others wrote meanwhile
            stored = self.admin.merge_patch(f"{url}/{obj['metadata']['name']}/status", {"status": obj["status"]})
        return stored

    def as_account(self, account: str, tmp: Path) -> KubeClient:
        """A client through the proxy with a token of daemonset/'s ServiceAccount
        caldera-system/`account`: RBAC as installed judges each call (`proxy.forbidden`)."""
        self.real.apply_rbac()
        token = service_account_token(self.admin, "caldera-system", account, controlplane.ISSUER)
        kubeconfig = controlplane.write_kubeconfig(tmp / f"{account}.kubeconfig", self.proxy.url, self.real.ca,
                                                   token=token)
        return KubeClient.connect(str(kubeconfig), qps=1000, burst=1000)

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.admin.get_or_none(self.url(api_version, kind, name))

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.get("v1", "Pod", name)

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        items = self.admin.get(self.url("v1", "Event"))["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]

    def _namespaced(self, obj: dict[str, Any]) -> bool:
        return "/namespaces/" in self.discovery.collection(obj["apiVersion"], obj["kind"], "x")


@pytest.fixture
def real(real_api: RealApi, tmp_path: Path) -> Iterator[Api]:
    admin = real_api.admin()
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    # Pods are admitted only once the namespace's default ServiceAccount exists.
    eventually(lambda: admin.get_or_none(f"/api/v1/namespaces/{namespace}/serviceaccounts/default"), timeout=30,
               what="the namespace's default ServiceAccount")
    real_api.proxy.reset()
    kubeconfig = real_api.proxy.kubeconfig(tmp_path / "proxy-kubeconfig", real_api.ca)
    try:
        yield Api(real_api, namespace, KubeClient.connect(str(kubeconfig), qps=1000, burst=1000), admin,
                  Discovery(admin), str(kubeconfig))
    finally:
        real_api.proxy.reset()
        _clean(admin, namespace)


# Cluster-scoped kinds tests create (or make Caldera create): the next test starts without them.
_CLUSTER_SCOPED = ("/api/v1/nodes", "/apis/scheduling.volcano.sh/v1beta1/queues",
                   "/apis/topology.volcano.sh/v1alpha1/hypernodes", "/apis/shard.volcano.sh/v1alpha1/nodeshards",
                   "/apis/scheduling.k8s.io/v1/priorityclasses",
                   "/apis/resource.k8s.io/v1/deviceclasses", "/apis/resource.k8s.io/v1/resourceslices",
                   "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                   "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations")


def _clean(admin: KubeClient, namespace: str) -> None:
    """Delete the test's namespace, its pods at once (no kubelet here to end them gracefully,
    and the next test's scheduler watches every namespace), and the cluster-scoped objects."""
    try:
        admin.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": 0})
        admin.delete(f"/api/v1/namespaces/{namespace}")
    except ApiError:
        pass
    for collection in _CLUSTER_SCOPED:
        for item in admin.get(collection)["items"]:
            name = item["metadata"]["name"]
            if not name.startswith("system-"):  # the apiserver's own PriorityClasses
                try:
                    admin.delete(f"{collection}/{name}")
                except ApiError:
                    pass
