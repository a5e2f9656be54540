"""charts/caldera installed by the real helm (built here from its Go module: this is the e2e
half) on a real kube-apiserver, as an operator would: install into a namespace helm creates,
upgrade with changed values, uninstall. The CRDs come from crds/ and stay, and so do the
users' Jobs and Queues; nothing lands outside the release's namespace."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from central.kube.client import ApiError, KubeClient
from central.localcluster import build, controlplane
from central.localcluster.build import BuildError
from central.localcluster.helm import helm_binary
from central.localcluster.processes import Supervisor
from tests.builders import job, queue, task
from tests.manifests import documents
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "caldera"
NAMESPACE = "caldera-system"
CRDS = {d["metadata"]["name"] for d in documents() if d["kind"] == "CustomResourceDefinition"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[tuple[Path, KubeClient]]:
    """A bare control plane of its own (no CRD applied): the chart brings everything."""
    why = build.unavailable()
    if why:
        pytest.skip(f"no real kube-apiserver here: {why}")
    directory = tmp_path_factory.mktemp("helmapi")
    sup = Supervisor(directory)
    try:
        controlplane.start(sup, build.binaries())
        yield directory / "kubeconfig", KubeClient.connect(str(directory / "kubeconfig"))
    finally:
        sup.stop_all()


@pytest.fixture(scope="module")
def helm(cluster, tmp_path_factory):
    try:
        binary = helm_binary(progress=print)
    except BuildError as err:
        pytest.skip(f"helm cannot be built here: {err}")
    kubeconfig, _ = cluster
    home = tmp_path_factory.mktemp("helmhome")
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), HELM_CACHE_HOME=str(home / "cache"),
               HELM_CONFIG_HOME=str(home / "config"), HELM_DATA_HOME=str(home / "data"))

    def run(*args: str) -> str:
        result = subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "symbolic link" not in result.stderr
        return result.stdout + result.stderr
    return run


def names(kube: KubeClient, path: str) -> set[str]:
    return {item["metadata"]["name"] for item in kube.get(path).get("items", [])}


def exists(kube: KubeClient, path: str) -> bool:
    try:
        kube.get(path)
        return True
    except ApiError as err:
        if err.status == 404:
            return False
        raise


def test_install_upgrade_uninstall_keep_crds_and_users_jobs(cluster, helm):
    _, kube = cluster
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    ns_path = f"/api/v1/namespaces/{NAMESPACE}"

    out = helm("install", "caldera", str(CHART), "-n", NAMESPACE, "--create-namespace")
    assert CRDS <= names(kube, crds)
    assert {"caldera-scheduler", "caldera-controllers", "caldera-admission"} == names(
        kube, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments")
    assert "sh.helm.release.v1.caldera.v1" in names(kube, f"/api/v1/namespaces/{NAMESPACE}/secrets")
    assert names(kube, "/apis/apps/v1/namespaces/default/deployments") == set()
    assert {"caldera-scheduler", "caldera-controllers", "caldera-admission"} == names(
        kube, f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets")
    assert "Namespace" not in out

    # the first uninstall: the CRDs stay; with no webhook configured, a user's objects go in
    helm("uninstall", "caldera", "-n", NAMESPACE, "--wait")
    assert CRDS <= names(kube, crds)
    assert names(kube, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments") == set()
    assert names(kube, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations") == set()
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    kube.create("/apis/scheduling.volcano.sh/v1beta1/queues", queue("research", weight=2))
    kube.create("/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs", job("training", "team-a", queue="research", tasks=[task("worker")],
                                                                                   minAvailable=1))

    # again, over the CRDs already there (helm skips them), then an upgrade with changed values
    out = helm("install", "caldera", str(CHART), "-n", NAMESPACE)
    helm("upgrade", "caldera", str(CHART), "-n", NAMESPACE, "--set", "controllers.replicas=3",
         "--set", "scheduler.priorityClassName=system-node-critical",
         "--set-json", 'admission.extraArgs=["--kube-api-qps=50"]',
         "--set-json", 'admission.resourceGroups=[{"resourceGroup": "m", "object": {"key": "namespace", "value": ["team-a"]}},'
                       '{"resourceGroup": "c", "object": {"key": "annotation", "value": ["example.com/pool: cpu"]}}]')
    deployments = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
    assert kube.get(f"{deployments}/caldera-controllers")["spec"]["replicas"] == 3
    assert kube.get(f"{deployments}/caldera-scheduler")["spec"]["template"]["spec"]["priorityClassName"] == \
        "system-node-critical"
    [admission] = kube.get(f"{deployments}/caldera-admission")["spec"]["template"]["spec"]["containers"]
    assert admission["args"][-1] == "--kube-api-qps=50"
    # the widened matchCondition passed the API server's CEL compilation
    [pods] = [w for w in kube.get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/caldera-mutate")[
        "webhooks"] if w["name"] == "mutatepod.caldera.sh"]
    assert 'request.namespace in ["team-a"]' in pods["matchConditions"][0]["expression"]
    # the certificates Job is named per revision: the upgrade made the new one, helm removed the old
    assert names(kube, f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs") == {"caldera-certs-2"}

    helm("uninstall", "caldera", "-n", NAMESPACE, "--wait")
    eventually(lambda: names(kube, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts") <= {"default"},
               timeout=30, what="the release's objects gone")
    assert CRDS <= names(kube, crds)
    assert exists(kube, "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs/training")
    assert exists(kube, "/apis/scheduling.volcano.sh/v1beta1/queues/research")
    assert exists(kube, ns_path)  # helm never deletes a namespace; the chart renders none
    for kind in ("clusterroles", "clusterrolebindings"):
        assert not {n for n in names(kube, f"/apis/rbac.authorization.k8s.io/v1/{kind}") if n.startswith("caldera")}
