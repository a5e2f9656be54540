"""Volume binding on a real control plane: the scheduler picks the node with the claims in
mind, then binds a matching volume (the PV controller completes the binding) or selects the
node for a WaitForFirstConsumer provisioner (a fake one here, see `fake_provisioner`), and the
simulated kubelet starts a pod only once its claims are Bound. A gang whose volumes cannot
all be met binds nothing and says which claim stands in the way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from central.kube.client import ApiError
from tests.e2e.conftest import Tenant, volcano_job, wait_for
from tests.e2e.fake_provisioner import FakeProvisioner

pytestmark = pytest.mark.e2e

PROVISIONER = "fake-provisioner.test.caldera.sh"


@contextmanager
def cluster_objects(tenant: Tenant, *objects: tuple[str, dict[str, Any]]) -> Iterator[None]:
    """Cluster-scoped objects (StorageClasses, PersistentVolumes) for one test, deleted after it."""
    try:
        for url, body in objects:
            tenant.create(url, body)
        yield
    finally:
        for url, body in objects:
            try:
                tenant.kube.delete(f"{url}/{body['metadata']['name']}")
            except ApiError:
                pass


def storage_class(name: str, provisioner: str, nodes: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    body: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}
    if nodes:
        body["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": nodes}]}]
    return "/apis/storage.k8s.io/v1/storageclasses", body


def local_volume(name: str, storage_class: str, node: str, size: str) -> tuple[str, dict[str, Any]]:
    return "/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "persistentVolumeReclaimPolicy": "Retain", "local": {"path": f"/mnt/{name}"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}}


def claim(tenant: Tenant, name: str, storage_class: str, size: str = "1Gi") -> None:
    tenant.create(f"/api/v1/namespaces/{tenant.namespace}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": size}}}})


def get_claim(tenant: Tenant, name: str) -> dict[str, Any]:
    return tenant.kube.get(f"/api/v1/namespaces/{tenant.namespace}/persistentvolumeclaims/{name}")


def job_with_claim(name: str, tenant: Tenant, claim_name: str) -> dict[str, Any]:
    return volcano_job(name, tenant.queue, replicas=1, duration="2s", extra_spec={"volumes": [
        {"mountPath": "/data", "volumeClaimName": claim_name}]})


def test_a_wait_for_first_consumer_claim_is_provisioned_on_the_node_the_scheduler_chose(tenant: Tenant) -> None:
    sc = f"fast-{tenant.namespace}"
    with cluster_objects(tenant, storage_class(sc, PROVISIONER, nodes=["node-2"])), \
            FakeProvisioner(tenant.kube, tenant.namespace, sc, PROVISIONER) as provisioner:
        claim(tenant, "scratch", sc)
        tenant.submit(job_with_claim("provisioned", tenant, "scratch"))
        wait_for(lambda: tenant.phase("provisioned") == "Completed", "the job Completed on its provisioned claim",
                 timeout=120)
        bound = get_claim(tenant, "scratch")
        assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-2"
        assert bound["status"]["phase"] == "Bound" and bound["spec"]["volumeName"] == provisioner.volume_name("scratch")
        assert [p["spec"]["nodeName"] for p in tenant.pods()] == ["node-2"]  # the class's allowed topology


def test_a_local_volume_pins_its_pod_to_its_node_and_the_claim_takes_the_volume_that_fits(tenant: Tenant) -> None:
    ns, sc = tenant.namespace, f"local-{tenant.namespace}"
    with cluster_objects(tenant, storage_class(sc, "kubernetes.io/no-provisioner"),
                         local_volume(f"small-{ns}", sc, "node-2", "512Mi"),
                         local_volume(f"fits-{ns}", sc, "node-1", "1Gi")):
        claim(tenant, "data", sc)
        tenant.submit(job_with_claim("pinned", tenant, "data"))
        wait_for(lambda: tenant.phase("pinned") == "Completed", "the job Completed on the local volume", timeout=120)
        assert [p["spec"]["nodeName"] for p in tenant.pods()] == ["node-1"]
        bound = get_claim(tenant, "data")
        assert bound["status"]["phase"] == "Bound" and bound["spec"]["volumeName"] == f"fits-{ns}"
        fits = tenant.kube.get(f"/api/v1/persistentvolumes/fits-{ns}")
        assert fits["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        small = tenant.kube.get(f"/api/v1/persistentvolumes/small-{ns}")
        assert not small["spec"].get("claimRef")


def test_a_gang_whose_volumes_cannot_all_be_met_binds_nothing_and_names_the_claim(tenant: Tenant) -> None:
    ns, sc = tenant.namespace, f"local-{tenant.namespace}"
    with cluster_objects(tenant, storage_class(sc, "kubernetes.io/no-provisioner"),
                         local_volume(f"one-{ns}", sc, "node-1", "1Gi"),
                         local_volume(f"two-{ns}", sc, "node-2", "1Gi")):
        tenant.create(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups", {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "trio"},
            "spec": {"minMember": 3, "queue": tenant.queue}})
        for i in range(3):
            claim(tenant, f"data-{i}", sc)
            tenant.create(f"/api/v1/namespaces/{ns}/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"trio-{i}", "annotations": {"scheduling.k8s.io/group-name": "trio"}},
                "spec": {"schedulerName": "volcano", "restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox",
                                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                         "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i}"}}]}})

        def why() -> str:
            return " ".join(c.get("message", "") for p in tenant.pods() for c in p.get("status", {}).get("conditions") or []
                            if c["type"] == "PodScheduled" and c["status"] == "False")

        reason = wait_for(lambda: "persistent volumes to bind for claim" in why() and why(),
                          "the pods say which claim cannot be met")
        assert 'for claim "data-' in reason
        assert not any(p["spec"].get("nodeName") for p in tenant.pods())
        for name in (f"one-{ns}", f"two-{ns}"):
            assert not tenant.kube.get(f"/api/v1/persistentvolumes/{name}")["spec"].get("claimRef"), name
        assert all(get_claim(tenant, f"data-{i}")["status"]["phase"] == "Pending" for i in range(3))
