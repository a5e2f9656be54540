"""The pure parts of putting Volcano in Caldera's place, and of finding Volcano's source."""

from __future__ import annotations

import subprocess

import pytest

from central.conformance import build, environment, volcano
from central.localcluster import versions
from central.localcluster.build import BuildError

CHART_WEBHOOK = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "volcano-admission-service-pods-mutate"},
    "webhooks": [{"name": "mutatepod.volcano.sh", "admissionReviewVersions": ["v1"],
                  "clientConfig": {"service": {"name": "integration-admission-service", "namespace": "volcano-system",
                                               "path": "/pods/mutate", "port": 443}}}],
}


def test_webhooks_call_the_local_manager_by_url_and_other_documents_are_dropped():
    docs = volcano.localise_webhooks([CHART_WEBHOOK, None, {"kind": "Service"}], 18443)
    assert len(docs) == 1
    assert docs[0]["webhooks"][0]["clientConfig"] == {"url": "https://127.0.0.1:18443/pods/mutate"}
    assert docs[0]["webhooks"][0]["name"] == "mutatepod.volcano.sh"


def test_what_volcano_replaces_comes_from_calderas_own_manifests():
    objects = volcano.caldera_objects()
    kinds = {kind for _, kind, _ in objects}
    assert {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition"} <= kinds
    crds = {name for _, kind, name in objects if kind == "CustomResourceDefinition"}
    assert {"queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh", "jobs.batch.volcano.sh"} <= crds
    assert not any(kind in ("Deployment", "ServiceAccount", "Namespace") for _, kind, _ in objects)


def test_the_cluster_is_shaped_as_volcano_ci_kind_cluster():
    nodes = environment.nodes()
    assert [(n.cpu, n.memory) for n in nodes] == [("4", "16Gi")] * 4
    ns, cm = environment.objects("actions: allocate\n")
    assert ns["metadata"]["name"] == "volcano-system"
    assert cm["metadata"] == {"name": "integration-scheduler-configmap", "namespace": "volcano-system"}
    assert cm["data"] == {"volcano-scheduler-ci.conf": "actions: allocate\n"}


def test_without_a_repository_the_harness_says_what_to_provide(monkeypatch):
    monkeypatch.delenv(build.REPO_ENV, raising=False)
    with pytest.raises(BuildError) as err:
        build.find_repo()
    assert "--volcano-repo PATH" in str(err.value) and build.REPO_ENV in str(err.value)
    assert versions.VOLCANO[:12] in str(err.value)


def test_a_repository_without_the_pinned_commit_is_refused(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv(build.REPO_ENV, str(tmp_path))
    with pytest.raises(BuildError, match="fetch origin"):
        build.find_repo()


def test_missing_lists_what_the_cache_lacks(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "vcctl").write_text("")
    (tmp_path / "bin" / "e2e-admission.test").write_text("")
    left = build.missing(tmp_path, ("admission", "vcctl"))
    assert "vcctl" not in left and "e2e-admission.test" not in left
    assert {"vc-scheduler", "ginkgo", "e2e-vcctl.test"} <= set(left)
