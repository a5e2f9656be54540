"""The real-control-plane suite: one `caldera up` cluster per test session (etcd,
kube-apiserver, kube-controller-manager built from Go modules; Caldera installed from
daemonset/; simulated nodes with node agents), and a namespace and queue per test so that
tests never depend on each other's order. Without Go (and no cached build) every test that
asks for the cluster skips with the reason."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from central.kube.client import ApiError, KubeClient
from central.localcluster import build, controlplane
from central.localcluster.simkubelet import NodeSpec
from central.localcluster.up import Cluster, down, up
from tests.waiting import eventually

# The scheduler configuration the suite installs: Volcano's default plus preempt, and the
# placement plugins fed by the agents (numa-aware) and GPU sharing, as the README says to enable,
# network-topology-aware (it changes nothing while no HyperNode exists), and Dynamic Resource
# Allocation (only pods with ResourceClaims are affected; gpu-1 publishes DRA GPUs and NICs).
SCHEDULER_CONF = """\
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
    arguments: {predicate.DynamicResourceAllocationEnable: true}
  - name: proportion
  - name: nodeorder
  - name: numa-aware
  - name: deviceshare
    arguments: {deviceshare.GPUSharingEnable: true, deviceshare.GPUNumberEnable: true}
  - name: network-topology-aware
"""

# Volcano's CI turns queue admission by scheduling gate on; only pods that opt in are affected.
FEATURE_GATES = "SchedulingGatesQueueAdmission=true"

NODES = [NodeSpec("node-1", cpu="16", memory="64Gi", numa=2),
         NodeSpec("node-2", cpu="16", memory="64Gi", numa=2),
         NodeSpec("gpu-1", cpu="16", memory="64Gi", numa=2, gpus=2, dra_gpus=4, dra_nics=2)]


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """`eventually`, at a pace that does not load the apiserver (every 0.2 s)."""
    return eventually(check, timeout=timeout, what=what, interval=0.2)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    why = build.unavailable()
    if why:
        pytest.skip(f"no real control plane here: {why}")
    directory = tmp_path_factory.mktemp("cluster")
    lines: list[str] = []
    try:
        started = up(directory, NODES, scheduler_conf=SCHEDULER_CONF, say=lines.append, feature_gates=FEATURE_GATES)
    except build.BuildError as err:
        pytest.fail(f"the control plane did not build: {err}")
    try:
        yield started
    finally:
        down(directory)


@dataclass
class Tenant:
    """A test's own namespace and queue, and the admin client."""

    kube: KubeClient
    namespace: str
    queue: str
    cluster: Cluster

    def create(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.kube.create(url, body)

    @property
    def jobs(self) -> str:
        return f"/apis/batch.volcano.sh/v1alpha1/namespaces/{self.namespace}/jobs"

    def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        return self.kube.create(self.jobs, job)

    def job(self, name: str) -> dict[str, Any]:
        return self.kube.get(f"{self.jobs}/{name}")

    def phase(self, name: str) -> str:
        return (self.job(name).get("status") or {}).get("state", {}).get("phase", "")

    def pods(self, selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={selector}" if selector else ""
        return self.kube.get(f"/api/v1/namespaces/{self.namespace}/pods{query}")["items"]

    def podgroup(self, name: str) -> dict[str, Any] | None:
        return self.kube.get_or_none(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{self.namespace}/podgroups/{name}")

    def job_podgroup(self, job: str) -> dict[str, Any] | None:
        """The Job's PodGroup, named as Volcano names it: `<job>-<job uid>`."""
        return self.podgroup(f"{job}-{self.job(job)['metadata']['uid']}")

    def events(self, kind: str, name: str) -> list[dict[str, Any]]:
        return [e for e in self.kube.get(f"/api/v1/namespaces/{self.namespace}/events")["items"]
                if (e["involvedObject"].get("kind"), e["involvedObject"].get("name")) == (kind, name)]

    def caldera(self, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess:
        """The `caldera` command line against this cluster, as a person runs it."""
        return subprocess.run([sys.executable, "-m", "caldera", *args,
                               "--kubeconfig", str(kubeconfig or self.cluster.kubeconfig)],
                              capture_output=True, text=True, timeout=60)


@pytest.fixture
def tenant(cluster: Cluster, request) -> Iterator[Tenant]:
    kube = cluster.admin()
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{slug}-{uuid.uuid4().hex[:4]}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kube.create("/apis/scheduling.volcano.sh/v1beta1/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name}, "spec": {"weight": 1, "reclaimable": True}})
    try:
        yield Tenant(kube, name, name, cluster)
    finally:
        for url in (f"/api/v1/namespaces/{name}", f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}"):
            try:
                kube.delete(url)
            except ApiError:
                pass


def volcano_job(name: str, queue: str, replicas: int = 2, min_available: int | None = None,
                duration: str | None = None, exit_code: int | None = None, cpu: str = "1",
                policies: list[dict[str, str]] | None = None, max_retry: int | None = None,
                restart_policy: str = "Never", extra_spec: dict[str, Any] | None = None,
                annotations: dict[str, str] | None = None) -> dict[str, Any]:
    pod_annotations = dict(annotations or {})
    if duration:
        pod_annotations["sim.caldera.sh/duration"] = duration
    if exit_code is not None:
        pod_annotations["sim.caldera.sh/exit-code"] = str(exit_code)
    spec: dict[str, Any] = {
        "minAvailable": replicas if min_available is None else min_available,
        "schedulerName": "volcano", "queue": queue,
        "tasks": [{"name": "worker", "replicas": replicas, "template": {
            "metadata": {"annotations": pod_annotations},
            "spec": {"restartPolicy": restart_policy, "containers": [{
                "name": "main", "image": "busybox",
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}}}]}
    if policies is not None:
        spec["policies"] = policies
    if max_retry is not None:
        spec["maxRetry"] = max_retry
    spec.update(extra_spec or {})
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def as_token(tenant: Tenant, token_file: Path) -> KubeClient:
    """A client of the cluster that authenticates with the token in `token_file`."""
    path = controlplane.write_kubeconfig(tenant.cluster.dir / "kubeconfigs" / f"test-{token_file.parent.name}",
                                         tenant.cluster.server, tenant.cluster.dir / "pki" / "ca.crt",
                                         token=token_file.read_text())
    return KubeClient.connect(str(path))
