"""The HyperNode tree over node rows: what network-topology-aware scheduling searches.

Built from the cache's HyperNodes and nodes (`ClusterCache.topology()`, rebuilt only when
either changed). Each HyperNode knows its parent, children and the node rows it holds,
its own Node members and everything below it (Volcano's RealNodesSet). A virtual
`<cluster-top>` HyperNode one tier above the highest real one holds every HyperNode
without a parent and every node, as Volcano's session adds `ClusterTopHyperNode`.

A malformed tree is one HyperNode's problem, not the cluster's: a HyperNode that claims a
member already claimed by another (two parents), or that lies on a cycle of HyperNode
members, is left out with the reason in `faults`, and the rest of the tree is used.
(Volcano marks its whole HyperNode cache not ready instead, which holds back every job with
a network topology.) A HyperNode member that names no HyperNode adds nothing, as in Volcano.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from central.model.hypernodes import HyperNodeSpec
from central.model.objects import NodeInfo

CLUSTER_TOP = "<cluster-top>"


@dataclass(slots=True, eq=False)
class HyperNode:
    name: str
    tier: int
    tier_name: str
    mask: np.ndarray  # bool over node rows: the real nodes it holds, members of members included
    parent: str = ""
    children: list[str] = field(default_factory=list)

    @property
    def rows(self) -> np.ndarray:
        return np.flatnonzero(self.mask)


class Topology:
    def __init__(self, specs: Mapping[str, HyperNodeSpec], nodes: Sequence[NodeInfo], size: int):
        self.size = size  # node rows the masks cover
        self.faults: dict[str, str] = {}  # HyperNode -> why it is left out
        self.hypernodes: dict[str, HyperNode] = {}
        self._link(specs)
        for name in sorted(specs):
            if name not in self.faults:
                self.hypernodes[name] = HyperNode(name, specs[name].tier, specs[name].tier_name, np.zeros(size, dtype=bool))
        self._fill(specs, nodes)
        self.tiers_real = sorted({hn.tier for hn in self.hypernodes.values()})
        top = HyperNode(CLUSTER_TOP, (self.tiers_real[-1] + 1) if self.tiers_real else 1, "", np.zeros(size, dtype=bool))
        top.mask[: len(nodes)] = True
        self.hypernodes[CLUSTER_TOP] = top
        for hn in list(self.hypernodes.values()):
            if hn is not top:
                hn.parent = self._parent.get(hn.name, CLUSTER_TOP)
                self.hypernodes[hn.parent].children.append(hn.name)
        self.tiers = [*self.tiers_real, top.tier]  # Volcano's HyperNodesTiers: the top's tier included
        self.tier_names: dict[str, int] = {}
        for hn in self.hypernodes.values():
            if hn.tier_name:
                self.tier_names[hn.tier_name] = hn.tier  # Volcano: on a conflict the last one read wins
        lowest = [hn for hn in self.hypernodes.values() if self.tiers_real and hn.tier == self.tiers_real[0]]
        self.leaf_of = np.full(size, -1, dtype=np.int64)  # row -> index in self.leaves (-1: none)
        self.leaves = [hn.name for hn in lowest]
        for i, hn in enumerate(lowest):
            self.leaf_of[hn.mask & (self.leaf_of < 0)] = i

    @property
    def top(self) -> HyperNode:
        return self.hypernodes[CLUSTER_TOP]

    def _link(self, specs: Mapping[str, HyperNodeSpec]) -> None:
        """Parents from HyperNode members; the second claim on a member and the HyperNodes on
        a cycle are faulted."""
        self._parent: dict[str, str] = {}
        for name in sorted(specs):
            for member in specs[name].members:
                if member.type != "HyperNode":
                    continue
                child = member.exact
                if child not in specs:
                    continue
                if child in self._parent and self._parent[child] != name:
                    self.faults[name] = (f"spec.members: HyperNode {child} is already a member of "
                                         f"HyperNode {self._parent[child]}; a HyperNode has one parent")
                    continue
                self._parent[child] = name
        for name in sorted(specs):
            seen = [name]
            up = self._parent.get(name)
            while up is not None and up not in seen:
                seen.append(up)
                up = self._parent.get(up)
            if up == name:
                self.faults[name] = "spec.members: HyperNode members form a cycle: " + " -> ".join([*seen, name])
        for child, parent in list(self._parent.items()):
            if child in self.faults or parent in self.faults:
                del self._parent[child]

    def _fill(self, specs: Mapping[str, HyperNodeSpec], nodes: Sequence[NodeInfo]) -> None:
        """Each HyperNode's own Node members, then its HyperNode members' rows, bottom up."""
        by_name = {node.name: node.index for node in nodes}
        for name, hn in self.hypernodes.items():
            for member in specs[name].members:
                if member.type != "Node":
                    continue
                if member.exact:
                    if member.exact in by_name:
                        hn.mask[by_name[member.exact]] = True
                    continue
                for node in nodes:
                    if member.matches(node.name, node.labels):
                        hn.mask[node.index] = True
        for name in sorted(self.hypernodes, key=lambda n: self._depth(n), reverse=True):
            parent = self._parent.get(name)
            if parent is not None:
                self.hypernodes[parent].mask |= self.hypernodes[name].mask

    def _depth(self, name: str) -> int:
        depth = 0
        while name in self._parent:
            name, depth = self._parent[name], depth + 1
        return depth

    # --- queries ------------------------------------------------------------------------------

    def ancestors(self, name: str) -> list[str]:
        """`name`, its parent, ... up to the cluster top."""
        out = []
        while name:
            out.append(name)
            name = self.hypernodes[name].parent if name in self.hypernodes else ""
        return out

    def lca(self, left: str, right: str) -> str:
        """The lowest common ancestor; either side empty gives the other (Volcano's GetLCAHyperNode)."""
        if not left:
            return right
        if not right:
            return left
        mine = set(self.ancestors(left))
        return next((name for name in self.ancestors(right) if name in mine), "")

    def leaf(self, row: int) -> str:
        """The lowest-tier HyperNode holding the node ("" when none: Volcano's FindHyperNodeForNode)."""
        i = int(self.leaf_of[row]) if row < self.size else -1
        return self.leaves[i] if i >= 0 else ""

    def smallest_holding(self, rows: np.ndarray) -> str:
        """The lowest-tier HyperNode holding every one of `rows` (the cluster top at worst):
        where a job's placed tasks already are (Volcano's recoverAllocatedHyperNode)."""
        best = CLUSTER_TOP
        for hn in self.hypernodes.values():
            if hn.tier < self.hypernodes[best].tier and hn.mask[rows].all():
                best = hn.name
        return best
