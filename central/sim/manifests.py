"""Reading manifests: multi-document YAML files, or directories of them, into a cache.

This is the YAML feed of the cluster cache (the Kubernetes adapter is the other one).
Volcano Jobs are expanded into their PodGroup and pods as the job controller would.
Kinds the scheduler has no use for (Services, ConfigMaps, ...) are counted and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from central.errors import InputError
from central.model.cache import ClusterCache
from central.model.jobs import expand_job
from central.model.parse import object_ref, yaml_problem

# The order objects enter the cache: what others refer to comes first.
APPLY_ORDER = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class Manifests:
    objects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (source, object)
    skipped: dict[str, int] = field(default_factory=dict)  # kind -> count


def read_manifests(paths: list[str]) -> Manifests:
    out = Manifests()
    for path in paths:
        for file in _files(Path(path)):
            _read_file(file, out)
    return out


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())
        if not files:
            raise InputError(str(path), "no .yaml or .yml files in this directory")
        return files
    if not path.exists():
        raise InputError(str(path), "no such file or directory")
    return [path]


def _read_file(file: Path, out: Manifests) -> None:
    try:
        docs = list(yaml.safe_load_all(file.read_text()))
    except OSError as err:
        raise InputError(str(file), f"cannot read: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise InputError(str(file), yaml_problem(err)) from None
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"{file}: document {i + 1}", "expected a Kubernetes object (a map)")
        if doc.get("kind") == "List":
            items = doc.get("items") or []
        else:
            items = [doc]
        for item in items:
            _add(str(file), item, out)


def _add(source: str, obj: dict[str, Any], out: Manifests) -> None:
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise InputError(f"{source}: {object_ref(obj)}", "kind is required")
    if kind == "Job" and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        try:
            podgroup, pods = expand_job(obj)
        except InputError as err:
            raise err.within(f"{source}: {object_ref(obj)}") from None
        out.objects.append((source, podgroup))
        out.objects.extend((source, pod) for pod in pods)
    elif kind in APPLY_ORDER:
        out.objects.append((source, obj))
    else:
        out.skipped[kind] = out.skipped.get(kind, 0) + 1


def sources_of(manifests: Manifests, kind: str) -> dict[str, str]:
    """Object name -> the file it came from, for messages about objects of `kind`."""
    return {(obj.get("metadata") or {}).get("name", ""): source for source, obj in manifests.objects if obj["kind"] == kind}


def load_into(cache: ClusterCache, manifests: Manifests) -> None:
    rank = {kind: i for i, kind in enumerate(APPLY_ORDER)}
    for source, obj in sorted(manifests.objects, key=lambda so: rank[so[1]["kind"]]):
        try:
            cache.apply(obj)
        except InputError as err:
            raise err.within(source) from None
