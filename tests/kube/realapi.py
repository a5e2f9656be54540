"""Fixtures for the adapter's tests on a real kube-apiserver: one bare control plane per
session (etcd, kube-apiserver, kube-controller-manager, Caldera's CRDs; no Caldera process
runs in it), the fault proxy in front of it, and a namespace per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from central.kube.client import ApiError, KubeClient
from central.localcluster import build, controlplane
from central.localcluster.install import Discovery, apply, kustomization_objects, repo_manifests
from central.localcluster.pki import Pair
from central.localcluster.processes import Supervisor
from tests.kube.conftest import eventually
from tests.kube.faultproxy import FaultProxy


@dataclass
class RealApi:
    server: str
    dir: Path
    proxy: FaultProxy

    @property
    def ca(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    def admin(self) -> KubeClient:
        return KubeClient.connect(str(self.dir / "kubeconfig"), qps=1000, burst=1000)


@pytest.fixture(scope="session")
def real_api(tmp_path_factory) -> Iterator[RealApi]:
    why = build.unavailable()
    if why:
        pytest.skip(f"no real kube-apiserver here: {why}")
    directory = tmp_path_factory.mktemp("realapi")
    sup = Supervisor(directory)
    try:
        endpoints = controlplane.start(sup, build.binaries())
        admin = KubeClient.connect(str(directory / "kubeconfig"), qps=1000, burst=1000)
        discovery = Discovery(admin)
        for obj in kustomization_objects(repo_manifests()):
            if obj["kind"] == "CustomResourceDefinition":
                apply(admin, discovery, obj)
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

    @property
    def proxy(self) -> FaultProxy:
        return self.real.proxy


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
        yield Api(real_api, namespace, KubeClient.connect(str(kubeconfig), qps=1000, burst=1000), admin)
    finally:
        real_api.proxy.reset()
        try:
            admin.delete(f"/api/v1/namespaces/{namespace}")
        except ApiError:
            pass
