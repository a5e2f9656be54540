"""Resource groups: the pods webhook places a namespace's or an annotation's pods on a group of
nodes, as Volcano's pods mutating webhook does from its admission configuration.

    resourceGroups:
    - resourceGroup: management
      object: {key: namespace, value: [mng-ns-1, mng-ns-2]}    # the pods of these namespaces
      schedulerName: default-scheduler
      tolerations: [{key: mng-taint-1, operator: Exists, effect: NoSchedule}]
      labels: {volcano.sh/nodetype: management}                 # merged into spec.nodeSelector
      affinity: '{"nodeAffinity": {...}}'                       # JSON; only for pods without one
    - resourceGroup: cpu
      object: {key: annotation, value: ["volcano.sh/resource-group: cpu"]}
      labels: {volcano.sh/nodetype: cpu}
    - resourceGroup: gpu                                        # no object: the pods annotated
      labels: {volcano.sh/nodetype: gpu}                        # volcano.sh/resource-group: gpu

The first group a pod belongs to decides, in the order written. `parse_resource_groups` refuses
what Volcano would silently drop (a value that is not `key: value`, affinity JSON that does not
parse), naming the field, so a typo fails the webhook's start or reload, not a pod later.

    parse_resource_groups(text) -> tuple[ResourceGroup, ...]
    place_in_group(pod, groups, namespace) -> dict   the pod with its group's placement (a copy)
    ResourceGroupsFile(path).groups()       the file's groups, read again when it changes
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from central.errors import InputError
from central.model.fields import YAML_LOADER, map_at, typed
from central.model.podspec import tolerations as parse_tolerations

log = logging.getLogger(__name__)

DEFAULT_ANNOTATION = "volcano.sh/resource-group"


@dataclass(frozen=True)
class ResourceGroup:
    name: str
    key: str  # "namespace", "annotation", or "" (the default annotation names the group)
    namespaces: frozenset[str]
    annotations: tuple[tuple[str, str], ...]
    scheduler_name: str
    tolerations: tuple[Mapping[str, Any], ...]
    labels: Mapping[str, str]
    affinity: Mapping[str, Any] | None

    def takes(self, namespace: str, annotations: Mapping[str, Any]) -> bool:
        """Volcano's IsBelongResGroup, namespace and annotation kinds."""
        if self.key == "namespace":
            return namespace in self.namespaces
        if any(annotations.get(k) == v for k, v in self.annotations):
            return True
        return self.key == "" and annotations.get(DEFAULT_ANNOTATION) == self.name


def parse_resource_groups(text: str) -> tuple[ResourceGroup, ...]:
    """The admission configuration's `resourceGroups`; InputError names the field."""
    try:
        raw = yaml.load(text, Loader=YAML_LOADER) or {}  # noqa: S506 (a safe loader)
    except yaml.YAMLError as err:
        raise InputError("admission configuration", f"malformed YAML: {err}") from None
    groups = typed(typed(raw, Mapping, "admission configuration").get("resourceGroups") or [], list, "resourceGroups")
    return tuple(_group(item, f"resourceGroups[{i}]") for i, item in enumerate(groups))


def _group(raw: Any, where: str) -> ResourceGroup:
    raw = typed(raw, Mapping, where)
    obj = typed(raw.get("object") or {}, Mapping, f"{where}.object")
    key = typed(obj.get("key") or "", str, f"{where}.object.key")
    if key not in ("", "namespace", "annotation"):
        raise InputError(f"{where}.object.key", f"must be namespace or annotation, got {key!r}")
    values = [typed(v, str, f"{where}.object.value[{j}]")
              for j, v in enumerate(typed(obj.get("value") or [], list, f"{where}.object.value"))]
    pairs = []
    if key != "namespace":
        for j, value in enumerate(values):
            name, colon, wanted = value.partition(":")
            if not colon or not name.strip():
                raise InputError(f"{where}.object.value[{j}]", f"expected 'key: value', got {value!r}")
            pairs.append((name.strip(), wanted.strip()))
    affinity = None
    if raw.get("affinity"):
        try:
            affinity = typed(json.loads(typed(raw["affinity"], str, f"{where}.affinity")), Mapping, f"{where}.affinity")
        except json.JSONDecodeError as err:
            raise InputError(f"{where}.affinity", f"not JSON: {err.msg}") from None
    tolerations = typed(raw.get("tolerations") or [], list, f"{where}.tolerations")
    try:
        parse_tolerations({"tolerations": tolerations})  # checked as a pod's would be
    except InputError as err:
        raise InputError(f"{where}.{err.where.removeprefix('spec.')}", err.message) from None
    labels = typed(raw.get("labels") or {}, Mapping, f"{where}.labels")
    return ResourceGroup(
        name=typed(raw.get("resourceGroup") or "", str, f"{where}.resourceGroup"), key=key,
        namespaces=frozenset(values) if key == "namespace" else frozenset(), annotations=tuple(pairs),
        scheduler_name=typed(raw.get("schedulerName") or "", str, f"{where}.schedulerName"),
        tolerations=tuple(tolerations), labels={str(k): str(v) for k, v in labels.items()}, affinity=affinity)


def place_in_group(pod: Mapping[str, Any], groups: tuple[ResourceGroup, ...], namespace: str) -> dict[str, Any]:
    """The pod as Volcano's createPatch leaves it: the first group it belongs to merges its
    labels into nodeSelector, sets its affinity where the pod has none, appends its
    tolerations and sets the scheduler name."""
    annotations = map_at(map_at(pod, "metadata"), "annotations")
    group = next((g for g in groups if g.takes(namespace, annotations)), None)
    if group is None:
        return dict(pod)
    spec = dict(map_at(pod, "spec"))
    if group.labels:
        spec["nodeSelector"] = {**map_at(spec, "nodeSelector"), **group.labels}
    if group.affinity is not None and not spec.get("affinity"):
        spec["affinity"] = dict(group.affinity)
    if group.tolerations:
        have = spec.get("tolerations")
        spec["tolerations"] = [*(have if isinstance(have, list) else []), *(dict(t) for t in group.tolerations)]
    if group.scheduler_name:
        spec["schedulerName"] = group.scheduler_name
    return {**pod, "spec": spec}


class ResourceGroupsFile:
    """The admission configuration file (Volcano's --admission-conf, a mounted ConfigMap), read
    again when it changes. A change that cannot be read keeps the groups read last, logged and
    in `problem`; a file that cannot be read at start is an error then (InputError)."""

    def __init__(self, path: str):
        self.path = path
        self.problem: str | None = None
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._groups = self._read()  # the first read decides: a bad file stops the webhook's start

    def _read(self) -> tuple[ResourceGroup, ...]:
        stat = os.stat(self.path)
        with open(self.path, encoding="utf-8") as handle:
            groups = parse_resource_groups(handle.read())
        self._stamp = (stat.st_mtime_ns, stat.st_size)
        return groups

    def groups(self) -> tuple[ResourceGroup, ...]:
        try:
            stat = os.stat(self.path)
        except OSError as err:  # a ConfigMap volume swaps its files: the old groups hold meanwhile
            self.problem = f"{self.path}: {err.strerror}"
            return self._groups
        if (stat.st_mtime_ns, stat.st_size) != self._stamp:
            with self._lock:
                try:
                    self._groups, self.problem = self._read(), None
                except (OSError, UnicodeDecodeError, InputError) as err:
                    self.problem = f"{self.path}: {err}"
                    self._stamp = (stat.st_mtime_ns, stat.st_size)  # logged once per change
                    log.warning("admission configuration not reloaded, the previous groups stay: %s", self.problem)
        return self._groups

