"""The HyperNode status as a pure function: how many nodes each HyperNode holds.

    node_counts(hypernodes, nodes) -> {name: count}

`status.nodeCount` (the NodeCount column of `kubectl get hypernodes`) counts the nodes a
HyperNode holds through its members and its members' members, on the same tree the scheduler
searches (`central.model.topology`). A HyperNode the scheduler leaves out (it claims another's
member, or lies on a cycle) counts only its own Node members; one that cannot be read at all
is not counted (admission refuses those; the scheduler's Event says why).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from central.errors import InputError
from central.model.fields import map_at
from central.model.hypernodes import HyperNodeSpec, parse_hypernode
from central.model.objects import NodeInfo
from central.model.topology import Topology


def node_counts(hypernodes: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    specs: dict[str, HyperNodeSpec] = {}
    for obj in hypernodes:
        try:
            spec = parse_hypernode(obj)
        except InputError:
            continue
        specs[spec.name] = spec
    infos: list[NodeInfo] = []
    for obj in nodes:
        meta = map_at(obj, "metadata")
        labels = map_at(meta, "labels")
        if isinstance(meta.get("name"), str):
            infos.append(NodeInfo(name=meta["name"], index=len(infos), labels={str(k): str(v) for k, v in labels.items()},
                                  taints=(), unschedulable=False, allocatable={}, max_pods=0))
    topology = Topology(specs, infos, len(infos))
    counts = {name: int(np.count_nonzero(hn.mask)) for name, hn in topology.hypernodes.items() if name in specs}
    for name in topology.faults:  # left out of the tree: its own Node members only
        alone = Topology({name: _nodes_only(specs[name])}, infos, len(infos))
        counts[name] = int(np.count_nonzero(alone.hypernodes[name].mask))
    return counts


def _nodes_only(spec: HyperNodeSpec) -> HyperNodeSpec:
    return HyperNodeSpec(spec.name, spec.tier, spec.tier_name, tuple(m for m in spec.members if m.type == "Node"))
