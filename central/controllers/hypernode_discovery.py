"""HyperNodes discovered from node labels, as Volcano's `label` discovery source builds them.

The controllers read `volcano-controller.conf` from their ConfigMap (Volcano's
`<release>-controller-configmap`):

    networkTopologyDiscovery:
    - source: label
      enabled: true
      config:
        networkTopologyTypes:
          rack-spine:                           # a topology type (at most 20 characters)
          - nodeLabel: example.com/spine        # the highest tier first ...
          - nodeLabel: example.com/rack
          - nodeLabel: kubernetes.io/hostname   # ... the node itself last (not a HyperNode)

Every node carrying `example.com/rack=r1` is a member of one tier-1 HyperNode (tierName
`example.com/rack`), and that HyperNode of the tier-2 one for its `example.com/spine`; a node
lacking a label stops its chain there. Each HyperNode carries its label and
`volcano.sh/network-topology-source: label`, which is how the next sync finds it again: an
existing one keeps its name (`hypernode-<type>-tier<N>-...`); a new one is named with a stable
hash of its label (Volcano draws a random suffix), so a restart names it the same. Discovered
HyperNodes that no node calls for any more are deleted; hand-written ones (without the source
label) are never touched. Other sources (ufm, roce) are Volcano's and not built here.

    desired_hypernodes(config, nodes, existing) -> {name: HyperNode}
    plan(desired, existing) -> (create, update, delete)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from central.errors import InputError
from central.model.fields import YAML_LOADER, typed

SOURCE_LABEL = "volcano.sh/network-topology-source"
SOURCE = "label"
CONFIG_KEY = "volcano-controller.conf"
TYPE_NAME_LIMIT = 20  # Volcano's networkTopologyTypeLength


def parse_config(text: str) -> dict[str, list[str]] | None:
    """Topology type -> its HyperNode labels, lowest tier first (the hostname level dropped);
    None when the label source is absent or disabled (then its HyperNodes are left as they
    are, as Volcano stops a removed source without deleting). InputError names the field."""
    try:
        raw = yaml.load(text, Loader=YAML_LOADER) or {}  # noqa: S506 (a safe loader)
    except yaml.YAMLError as err:
        raise InputError(CONFIG_KEY, f"malformed YAML: {err}") from None
    raw = typed(raw, Mapping, CONFIG_KEY)
    out: dict[str, list[str]] | None = None
    for i, source in enumerate(typed(raw.get("networkTopologyDiscovery") or [], list, "networkTopologyDiscovery")):
        where = f"networkTopologyDiscovery[{i}]"
        source = typed(source, Mapping, where)
        if source.get("source") != SOURCE or not source.get("enabled"):
            continue
        out = {} if out is None else out
        config = typed(source.get("config") or {}, Mapping, f"{where}.config")
        types = typed(config.get("networkTopologyTypes") or {}, Mapping, f"{where}.config.networkTopologyTypes")
        for name, levels in types.items():
            at = f"{where}.config.networkTopologyTypes.{name}"
            if len(str(name)) > TYPE_NAME_LIMIT:
                raise InputError(at, f"a topology type name is at most {TYPE_NAME_LIMIT} characters")
            keys = [str(typed(typed(level, Mapping, f"{at}[{j}]").get("nodeLabel"), str, f"{at}[{j}].nodeLabel"))
                    for j, level in enumerate(typed(levels, list, at))]
            if len(set(keys)) != len(keys):
                raise InputError(at, "a node label is listed twice")
            out[str(name)] = list(reversed(keys[:-1]))  # the last level is the node itself
    return out


def _clean(name: str) -> str:
    return "".join(c.lower() if c.isalpha() else c if c.isdigit() or c in ".-" else "-" for c in name)


def _suffix(key: str, value: str) -> str:
    return hashlib.sha256(f"{key}={value}".encode()).hexdigest()[:5]


def desired_hypernodes(types: Mapping[str, list[str]], nodes: Iterable[Mapping[str, Any]],
                       existing: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The HyperNodes the nodes' labels call for, by name, as objects to create or update."""
    found: dict[tuple[str, str], str] = {}  # (label, value) -> HyperNode name
    members: dict[str, set[str]] = {}
    shape: dict[str, tuple[int, str, str]] = {}  # name -> (tier, label, value)
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        labels = node["metadata"].get("labels") or {}
        for type_name, keys in sorted(types.items()):
            member = str(node["metadata"]["name"])
            for tier, key in enumerate(keys, start=1):
                value = labels.get(key)
                if value is None:
                    break
                name = found.get((key, value))
                if name is None:
                    name = found[(key, value)] = _name(type_name, tier, key, value, existing)
                    shape[name] = (tier, key, value)
                members.setdefault(name, set()).add(member)
                member = name
    out = {}
    for name, (tier, key, value) in shape.items():
        kind = "Node" if tier == 1 else "HyperNode"
        out[name] = {
            "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": name, "labels": {SOURCE_LABEL: SOURCE, key: value}},
            "spec": {"tier": tier, "tierName": key,
                     "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in sorted(members[name])]},
        }
    return out


def _name(type_name: str, tier: int, key: str, value: str, existing: Mapping[str, Mapping[str, Any]]) -> str:
    """An existing discovered HyperNode of this label keeps its name; else a stable new one."""
    prefix = f"hypernode-{_clean(type_name)}-tier{tier}"
    for name in sorted(existing):
        labels = existing[name].get("metadata", {}).get("labels") or {}
        if labels.get(SOURCE_LABEL) == SOURCE and labels.get(key) == value and name.startswith(prefix):
            return name
    return f"{prefix}-{_suffix(key, value)}"


def discovered(hypernodes: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The HyperNodes this source made (its label), by name."""
    return {name: obj for name, obj in hypernodes.items()
            if ((obj.get("metadata") or {}).get("labels") or {}).get(SOURCE_LABEL) == SOURCE}


def plan(desired: Mapping[str, dict[str, Any]], existing: Mapping[str, Mapping[str, Any]]
         ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(to create, to update with the existing object's metadata, names to delete), each
    sorted; `existing` holds this source's HyperNodes only."""
    create, update = [], []
    for name in sorted(desired):
        want = desired[name]
        have = existing.get(name)
        if have is None:
            create.append(want)
        elif _shape(have.get("spec")) != _shape(want["spec"]) or not _labels_hold(have, want):
            meta = dict(have["metadata"])
            meta["labels"] = {**(meta.get("labels") or {}), **want["metadata"]["labels"]}
            update.append({**have, "metadata": meta, "spec": want["spec"]})
    delete = sorted(name for name in existing if name not in desired)
    return create, update, delete


def _shape(spec: Any) -> tuple[Any, ...]:
    """What discovery decides of a spec, whatever defaults the API server added to it."""
    spec = spec if isinstance(spec, Mapping) else {}
    members = {(m.get("type"), ((m.get("selector") or {}).get("exactMatch") or {}).get("name"))
               for m in spec.get("members") or [] if isinstance(m, Mapping)}
    return spec.get("tier"), spec.get("tierName"), frozenset(members)


def _labels_hold(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    labels = (have.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in want["metadata"]["labels"].items())
