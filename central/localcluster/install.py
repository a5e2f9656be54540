"""Install Caldera from `daemonset/` into a running apiserver, as `kubectl apply -k daemonset/`
would: every object of the kustomization, by server-side apply, resolved through the
apiserver's own discovery. Two local adaptations, and only these:
- the workloads (Deployments, the DaemonSet, the certificate Job and CronJob) are not
  applied: `caldera up` runs their pods as local processes, each with a token of the
  ServiceAccount its manifest names (the renewal CronJob is not run: a local cluster lives
  for hours, its certificates for a year);
- the webhook process is started with `--webhook-url`, so the configurations it fills its
  caBundle into also call it by URL on loopback (in a cluster they name the Service).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from central.kube.client import ApiError, KubeClient
from central.model.fields import YAML_LOADER

FIELD_MANAGER = "caldera-up"
RUN_LOCALLY = {("apps/v1", "Deployment"), ("apps/v1", "DaemonSet"), ("batch/v1", "Job"), ("batch/v1", "CronJob")}
TOKEN_SECONDS = 7 * 24 * 3600


def repo_manifests() -> Path:
    """The repository's daemonset/, as the package carries it (`central/daemonset` links to it
    in a checkout, and the wheel ships the files there), so `caldera up` installs what the docs
    say from a checkout and from an installed wheel alike."""
    return Path(str(resources.files("central") / "daemonset"))  # pip installs packages unzipped


def kustomization_objects(directory: Path) -> Iterator[dict[str, Any]]:
    """The objects of `directory`'s kustomization, in its `resources` order, with its image set."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    for resource in kustomization.get("resources", []):
        for doc in yaml.load_all((directory / resource).read_text(), Loader=YAML_LOADER):  # noqa: S506 (safe)
            if isinstance(doc, dict) and doc.get("kind"):
                yield doc


class Discovery:
    """apiVersion + kind -> (collection path, namespaced), from the apiserver's discovery."""

    def __init__(self, kube: KubeClient):
        self.kube = kube
        self._groups: dict[str, dict[str, tuple[str, bool]]] = {}

    def collection(self, api_version: str, kind: str, namespace: str | None) -> str:
        resources = self._groups.get(api_version)
        if resources is None or kind not in resources:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listing = self.kube.get(base)
            resources = {r["kind"]: (r["name"], r["namespaced"]) for r in listing.get("resources", [])
                         if "/" not in r["name"]}
            self._groups[api_version] = resources
        if kind not in resources:
            raise ApiError(404, "NotFound", f"the server has no {kind} in {api_version}")
        plural, namespaced = resources[kind]
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return f"{base}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{base}/{plural}"


def apply_crds(kube: KubeClient) -> None:
    """daemonset/'s CustomResourceDefinitions alone, on a bare control plane (tests, benches)."""
    discovery = Discovery(kube)
    crds = [obj for obj in kustomization_objects(repo_manifests()) if obj["kind"] == "CustomResourceDefinition"]
    for obj in crds:
        apply(kube, discovery, obj)
    for obj in crds:  # served once Established: a create right after would answer 404
        _wait_established(kube, obj["metadata"]["name"])


def apply(kube: KubeClient, discovery: Discovery, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    url = discovery.collection(obj["apiVersion"], obj["kind"], meta.get("namespace")) + "/" + meta["name"]
    return kube.request("PATCH", url, query={"fieldManager": FIELD_MANAGER, "force": "true"},
                        body=json.dumps(obj), content_type="application/apply-patch+yaml")


def install(kube: KubeClient, directory: Path, configmaps: dict[str, dict[str, str]] | None = None,
            leave_out: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Apply every object of the kustomization but the workloads and those named in `leave_out`;
    return the workloads. `configmaps` replaces the data of the ConfigMaps it names, as a user edits them."""
    discovery = Discovery(kube)
    workloads = []
    configmaps = configmaps or {}
    for obj in kustomization_objects(directory):
        if obj["metadata"]["name"] in leave_out:
            continue
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] in configmaps:
            obj = dict(obj, data=configmaps[obj["metadata"]["name"]])
        if (obj.get("apiVersion"), obj["kind"]) in RUN_LOCALLY:
            workloads.append(obj)
            continue
        apply(kube, discovery, obj)
        if obj["kind"] == "CustomResourceDefinition":
            _wait_established(kube, obj["metadata"]["name"])
    return workloads


def _wait_established(kube: KubeClient, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        crd = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        if any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or []):
            return
        time.sleep(0.1)
    raise ApiError(504, "Timeout", f"CustomResourceDefinition {name} not Established after {timeout:.0f} s")


def service_account_token(kube: KubeClient, namespace: str, name: str, audience: str,
                          bound_node: str | None = None) -> str:
    """A bound token for ServiceAccount namespace/name from the TokenRequest API; bound to a
    Node when given, so it carries that node's name (authentication.kubernetes.io/node-name)."""
    spec: dict[str, Any] = {"audiences": [audience], "expirationSeconds": TOKEN_SECONDS}
    if bound_node:
        node = kube.get(f"/api/v1/nodes/{bound_node}")
        spec["boundObjectRef"] = {"kind": "Node", "apiVersion": "v1", "name": bound_node,
                                  "uid": node["metadata"]["uid"]}
    answer = kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    token: str = answer["status"]["token"]
    return token
