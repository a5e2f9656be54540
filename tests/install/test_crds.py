"""daemonset/crds.yaml is Volcano's own CRDs (hack/crds_from_volcano.py): full structural
schemas with their field descriptions, so installing Caldera over Volcano loses nothing and
`kubectl explain vcjob.spec.tasks` answers; checked against Volcano's files where the pinned
Volcano checkout is in the cache, and on the real API server's OpenAPI."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from central.kube.client import ApiError
from central.localcluster.build import cache_dir
from central.model.fields import YAML_LOADER
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
CRDS = {d["metadata"]["name"]: d for d in yaml.load_all((ROOT / "daemonset" / "crds.yaml").read_text(), Loader=YAML_LOADER) if d}  # noqa: S506
COMMIT = re.search(r"volcano-sh/volcano (\w+)", (ROOT / "daemonset" / "crds.yaml").read_text())[1]
BASES = cache_dir().parent / "volcano" / COMMIT / "src" / "installer" / "helm" / "chart" / "volcano" / "crd" / "bases"
FLOW_BASES = BASES.parents[1] / "charts" / "jobflow" / "crd" / "bases"  # JobFlow and JobTemplate: Volcano's subchart


@functools.cache
def _volcanos_by_name() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for p in [*BASES.glob("*.yaml"), *FLOW_BASES.glob("*.yaml")]
            if (d := yaml.load(p.read_text(), Loader=YAML_LOADER))}


def volcanos(name: str) -> dict[str, Any]:
    """Volcano's own CRD of that name."""
    return _volcanos_by_name()[name]


def schema(crd: dict[str, Any]) -> dict[str, Any]:
    [version] = [v for v in crd["spec"]["versions"] if v["storage"]]
    return version["schema"]["openAPIV3Schema"]


def described(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    """(path, description) of every field of a schema."""
    if node.get("description"):
        yield path, node["description"]
    for name, child in (node.get("properties") or {}).items():
        yield from described(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from described(node["items"], f"{path}[]")


def test_the_served_crds_are_structural_and_described():
    assert set(CRDS) == {"queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh", "jobs.batch.volcano.sh",
                         "commands.bus.volcano.sh", "hypernodes.topology.volcano.sh", "cronjobs.batch.volcano.sh",
                         "jobflows.flow.volcano.sh", "jobtemplates.flow.volcano.sh", "nodeshards.shard.volcano.sh"}
    for name, crd in CRDS.items():
        root = schema(crd)
        for part in (root, root["properties"].get("spec") or {}):
            assert not part.get("x-kubernetes-preserve-unknown-fields"), name  # full, not open
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep", name
    # Volcano's Job CRD has no descriptions (too big with the pod template); its own fields get them
    spec = schema(CRDS["jobs.batch.volcano.sh"])["properties"]["spec"]["properties"]
    assert spec["tasks"]["description"] == "Tasks specifies the task specification of Job"
    assert "minimal available pods" in spec["minAvailable"]["description"]
    assert spec["tasks"]["items"]["properties"]["replicas"]["description"].startswith("Replicas specifies")
    undescribed = [name for name, field in spec.items() if not field.get("description")]
    assert undescribed == []
    for name in ("queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh", "hypernodes.topology.volcano.sh"):
        assert len(dict(described(schema(CRDS[name])))) > 20, name


def test_caldera_keeps_its_stricter_checks():
    queue = schema(CRDS["queues.scheduling.volcano.sh"])["properties"]
    assert queue["spec"]["properties"]["weight"]["minimum"] == 1
    assert queue["status"]["properties"]["state"]["enum"] == ["Open", "Closed", "Closing", "Unknown"]


@pytest.mark.skipif(not BASES.is_dir(), reason=f"Volcano {COMMIT}'s checkout is not in the cache ({BASES})")
def test_every_description_of_volcanos_crds_is_kept():
    for name, crd in CRDS.items():
        volcano = volcanos(name)
        theirs, ours = dict(described(schema(volcano))), dict(described(schema(crd)))
        assert {path: text for path, text in theirs.items() if ours.get(path) != text} == {}, name
        assert [v["name"] for v in volcano["spec"]["versions"]] == [v["name"] for v in crd["spec"]["versions"]]


@pytest.mark.skipif(not BASES.is_dir(), reason=f"Volcano {COMMIT}'s checkout is not in the cache ({BASES})")
def test_the_printer_columns_are_volcanos_own():
    """`kubectl get vcjob` and `kubectl get pg` print the same columns over Caldera as over Volcano;
    `kubectl get nsh` prints the shard's nodes before Volcano's own columns."""
    added = {"nodeshards.shard.volcano.sh": ["NodesDesired", "NodesInUse"]}
    for name, crd in CRDS.items():
        volcano = volcanos(name)
        theirs = {v["name"]: v.get("additionalPrinterColumns") for v in volcano["spec"]["versions"]}
        ours = {v["name"]: v.get("additionalPrinterColumns") for v in crd["spec"]["versions"]}
        extra = added.get(name, [])
        assert {version: [c["name"] for c in (columns or [])][:len(extra)] for version, columns in ours.items()} \
            == {version: extra for version in theirs}, name
        assert {version: (columns or [])[len(extra):] or None for version, columns in ours.items()} == theirs, name


def test_the_api_server_serves_the_descriptions(real_api):
    """What `kubectl explain vcjob.spec.minAvailable` reads: the OpenAPI v3 the API server
    publishes (once its CRD controller has built it)."""
    admin = real_api.admin()

    def job_schema() -> dict[str, Any] | None:
        try:
            document = admin.get("/openapi/v3/apis/batch.volcano.sh/v1alpha1")
        except ApiError as err:
            if err.code == 404:
                return None
            raise
        return next((s for key, s in document["components"]["schemas"].items() if key.endswith("v1alpha1.Job")), None)

    job = eventually(job_schema, timeout=60, what="the Job CRD's OpenAPI published")
    assert "minimal available pods" in job["properties"]["spec"]["properties"]["minAvailable"]["description"]
