"""FakeProvisioner: a stand-in for a CSI external-provisioner, narrow and named as such.

The local control plane has no storage backend. What a real external-provisioner does for a
WaitForFirstConsumer claim is all that volume binding needs from one: once the scheduler set
`volume.kubernetes.io/selected-node` on a claim of its class, create a volume for it that
reaches that node only, pre-bound to the claim; the PV controller then binds the two. This
fake does exactly that for the claims of one namespace, polling (no watch to keep alive).
"""

from __future__ import annotations

import threading
from types import TracebackType

from central.kube.client import ApiError, KubeClient

SELECTED_NODE = "volume.kubernetes.io/selected-node"


class FakeProvisioner:
    def __init__(self, kube: KubeClient, namespace: str, storage_class: str, provisioner: str):
        self.kube, self.namespace = kube, namespace
        self.storage_class, self.provisioner = storage_class, provisioner
        self.provisioned: dict[str, str] = {}  # claim -> the node its volume reaches
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-provisioner", daemon=True)

    def __enter__(self) -> FakeProvisioner:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(5)
        for claim in self.provisioned:
            try:
                self.kube.delete(f"/api/v1/persistentvolumes/{self.volume_name(claim)}")
            except ApiError:
                pass

    def volume_name(self, claim: str) -> str:
        return f"fake-{self.namespace}-{claim}"

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            try:
                claims = self.kube.get(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims")["items"]
            except ApiError:
                continue
            for claim in claims:
                name = claim["metadata"]["name"]
                node = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE)
                if node and name not in self.provisioned and claim["spec"].get("storageClassName") == self.storage_class:
                    self._provision(claim, node)

    def _provision(self, claim: dict, node: str) -> None:
        name = claim["metadata"]["name"]
        self.kube.create("/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": self.volume_name(name), "annotations": {"pv.kubernetes.io/provisioned-by": self.provisioner}},
            "spec": {"capacity": {"storage": claim["spec"]["resources"]["requests"]["storage"]},
                     "accessModes": claim["spec"]["accessModes"], "storageClassName": self.storage_class,
                     "persistentVolumeReclaimPolicy": "Delete", "local": {"path": f"/fake/{self.namespace}/{name}"},
                     "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": self.namespace,
                                  "name": name, "uid": claim["metadata"]["uid"]},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
        self.provisioned[name] = node
