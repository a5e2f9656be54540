"""network-topology-aware: keep a gang inside one network domain (HyperNode), as Volcano does.

Jobs whose PodGroup has `spec.networkTopology` are placed by HyperNode, not node by node
(see `central.actions.hypernodes`). This plugin answers the two questions that search asks:

- `hypernode_gradients(job)`: the HyperNodes the gang may land in, grouped by tier, lowest
  tier first (Volcano's hyperNodeGradientFn). Hard mode: HyperNodes of tier <=
  `highestTierAllowed` (or the tier named by `highestTierName`). Soft mode is hard mode up to
  the virtual cluster-top HyperNode, so the whole cluster is the last resort (Volcano's
  convertSoftToHardTopology). The search starts at the cluster top, or, once some of the
  job's tasks are placed, at the highest ancestor of where they are that the tier allows
  (getSearchRoot). Before anything is placed, a HyperNode qualifies only if its idle or
  future idle covers the PodGroup's minResources (isEligibleHyperNode).
- `hypernode_order(job, hypernodes)`: Volcano's HyperNodeOrderFn. For each HyperNode, the
  weighted mean over cpu, memory and the configured resources of (used + what the job's
  pending tasks request) / allocatable, 0 where that overflows; where several share the top
  score, each adds (the job's tasks already in it) / (the job's tasks). Scaled by 100 x
  weight. Volcano adds the requests of all the job's tasks, placed ones too, which counts
  those twice once part of a gang is placed (its code assumes every task is pending) and
  pushes the rest of the gang away from where it is; with every task pending both agree.

It also scores nodes (Volcano's batchNodeOrderFn), summed with the other plugins:
- a task of a job with a network topology: 1 on a node of the lowest-tier HyperNode where the
  job already is, else (maxTier - tier of the lowest common ancestor) / (maxTier - minTier)
  (tiers counting the cluster top), 0 before anything of the job is placed; ties at the top
  score add the task-count share of the node's HyperNode;
- any other task (`hypernode.binpack.normal-pod.enable`, on by default): per tier t from the
  lowest to the cluster top, weighted fading^(t-1), the binpack score of the task in the
  node's HyperNode of that tier (1 where the node is in none), averaged.
Both scaled by 100 x weight.

Arguments (Volcano's names): weight (1), hypernode.binpack.cpu (1), hypernode.binpack.memory
(1), hypernode.binpack.resources ("a, b") with hypernode.binpack.resources.<name> (1),
hypernode.binpack.normal-pod.enable (true), hypernode.binpack.normal-pod.fading (0.8).
Negative values are refused (Volcano silently uses the default). The eviction-side
argument hypernode.gradient.evict.max-hypernodes is accepted and has no effect: preempt
and reclaim here do not search by HyperNode.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import AccountingPlugin, Arguments
from central.model.objects import ALLOCATED_STATUSES, JobInfo, NetworkTopology, TaskInfo, TaskStatus
from central.model.subgroups import SubGroup
from central.model.topology import HyperNode
from central.plugins.binpack import resource_weights
from central.resources.vectors import EPSILON

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

MAX_SCORE = 100.0
PLACED = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}


class NetworkTopologyAware(AccountingPlugin, ext.BatchNodeOrder, ext.HyperNodeGradients, ext.HyperNodeOrder):
    name = "network-topology-aware"

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[int, dict[str, int], bool, float]:
        """(weight, binpack weight per resource, normal-pod binpacking on, its fading)."""
        weights = resource_weights(args, "hypernode.binpack")
        weight = args.get("weight", 1, int)
        fading = args.get("hypernode.binpack.normal-pod.fading", 0.8, float)
        for key, value in (("weight", weight), ("hypernode.binpack.normal-pod.fading", fading)):
            if value < 0:
                raise args.error(key, f"must not be negative, got {value}")
        args.accept("hypernode.gradient.evict.max-hypernodes")
        return weight, weights, args.get("hypernode.binpack.normal-pod.enable", True, bool), fading

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.weight, weights, self.normal_pods, self.fading = self.settings
        self.weights = handle.dims.vector(weights)
        self.topo = topo = handle.topology
        for name, reason in topo.faults.items():
            handle.fault_hypernode(name, reason, self.name)
        self.names = list(topo.hypernodes)
        self.position = {name: i for i, name in enumerate(self.names)}
        n, table = len(handle.nodes), handle.table
        self.members = np.array([topo.hypernodes[name].mask[:n] for name in self.names]).reshape(len(self.names), n)
        self.alloc = self.members @ table.alloc[:n]
        self.used = self.members @ (table.used[:n] + table.pipelined[:n])  # kept current by charge()
        self.at_tier = {tier: self._by_tier(tier, n) for tier in topo.tiers}
        self._rows: dict[str, int] = {}  # task uid -> the row it was charged to
        self._where: dict[str, str] = {}  # job uid -> lowest HyperNode holding its placed tasks

    def _by_tier(self, tier: int, n: int) -> np.ndarray:
        """Row -> position of the node's HyperNode of `tier` (the first by name), -1 for none."""
        out = np.full(n, -1, dtype=np.int64)
        for i, name in enumerate(self.names):
            if self.topo.hypernodes[name].tier == tier:
                out[(out < 0) & self.members[i]] = i
        return out

    # --- tallies --------------------------------------------------------------------------

    def charge(self, task: TaskInfo, sign: int) -> None:
        node = self.handle.nodes_by_name.get(task.node) if task.node else None
        row = node.index if node is not None else self._rows.get(task.uid)
        if row is None or row >= self.members.shape[1]:
            return
        self.used[self.members[:, row]] += sign * task.resreq
        if sign > 0:
            self._rows[task.uid] = row
            if task.job_uid in self._where:
                self._where[task.job_uid] = self.topo.lca(self._where[task.job_uid], self.topo.leaf(row))
        else:
            self._rows.pop(task.uid, None)
            self._where.pop(task.job_uid, None)

    def _placed_in(self, job: JobInfo) -> str:
        """Where the job's placed tasks are: the lowest common ancestor of their nodes' lowest
        HyperNodes ("" when none is placed); Volcano's job AllocatedHyperNode."""
        where = self._where.get(job.uid)
        if where is None:
            where = ""
            nodes = self.handle.nodes_by_name
            for task in job.tasks.values():
                if task.status in PLACED and task.node in nodes:
                    where = self.topo.lca(where, self.topo.leaf(nodes[task.node].index))
            self._where[job.uid] = where
        return where

    # --- the HyperNode search ---------------------------------------------------------------

    def _highest_tier(self, spec: NetworkTopology | None, where: str) -> int | None:
        """The highest tier the gang may span; None when nothing bounds it (hard mode without
        a tier: Volcano treats it as no hard constraint). InputError for a tierName no
        HyperNode has (Volcano places such a job anywhere; we hold it and say why)."""
        if spec is None:
            return None
        if not spec.hard:
            return self.topo.top.tier
        if spec.highest_tier is not None:
            return spec.highest_tier
        if spec.highest_tier_name:
            if spec.highest_tier_name not in self.topo.tier_names:
                raise InputError(f"{where}.highestTierName", f"no HyperNode has tierName {spec.highest_tier_name!r}")
            return self.topo.tier_names[spec.highest_tier_name]
        return None

    def hypernode_gradients(self, job: JobInfo, group: SubGroup | None = None,
                            within: HyperNode | None = None) -> list[list[HyperNode]] | None:
        if group is None:
            highest = self._highest_tier(job.network_topology, "spec.networkTopology")
            placed, need = self._placed_in(job), self.handle.dims.vector(job.min_resources or {})
        else:
            spec = group.policy.network_topology
            if spec is None or not spec.hard:
                return None  # Volcano places a soft sub-group in the job's HyperNode, unsearched
            highest = self._highest_tier(spec, f"spec.subGroupPolicy[{group.policy.name}].networkTopology")
            nodes, placed = self.handle.nodes_by_name, ""
            for task in group.tasks:
                if task.status in PLACED and task.node in nodes:
                    placed = self.topo.lca(placed, self.topo.leaf(nodes[task.node].index))
            need = sum((t.resreq for t in group.tasks if t.status == TaskStatus.PENDING), self.handle.dims.zeros())
        if highest is None:
            return None
        root = self._search_root(within or self.topo.top, highest, placed)
        return [] if root is None else self._eligible(root, highest, placed, need)

    def _search_root(self, available: HyperNode, highest: int, placed: str) -> HyperNode | None:
        """Where the search starts (Volcano's getSearchRoot): `available`, or, once part of the
        gang is placed, the highest ancestor of where it is that the tier allows, whichever of
        the two holds the other; None when neither does."""
        if not placed:
            return available
        hypernodes = self.topo.hypernodes
        allowed = [name for name in self.topo.ancestors(placed) if hypernodes[name].tier <= highest]
        if not allowed:
            return None
        lca = self.topo.lca(available.name, allowed[-1])
        if lca == allowed[-1]:
            return available
        return hypernodes[allowed[-1]] if lca == available.name else None

    def _eligible(self, root: HyperNode, highest: int, placed: str, need: np.ndarray) -> list[list[HyperNode]]:
        """`root` and the HyperNodes under it of tier <= `highest`, by tier, lowest first
        (breadth first, children by name); before anything is placed, only those whose idle or
        future idle covers `need` (isEligibleHyperNode)."""
        hypernodes, table = self.topo.hypernodes, self.handle.table
        by_tier: dict[int, list[HyperNode]] = {}
        line = [root]
        for hn in line:  # `line` grows as children are reached
            line.extend(hypernodes[child] for child in sorted(hn.children))
            if hn.tier > highest:
                continue
            if not placed:
                rows = hn.rows
                if not (np.all(table.idle[rows].sum(axis=0) + EPSILON > need)
                        or np.all(table.future[rows].sum(axis=0) + EPSILON > need)):
                    continue
            by_tier.setdefault(hn.tier, []).append(hn)
        return [by_tier[tier] for tier in sorted(by_tier)]

    def hypernode_order(self, job: JobInfo, candidates: list[HyperNode], group: SubGroup | None = None) -> np.ndarray:
        tasks = job.tasks.values() if group is None else group.tasks
        request = sum((t.resreq for t in tasks if t.status == TaskStatus.PENDING), self.handle.dims.zeros())
        scores = self._binpack(request)[[self.position[hn.name] for hn in candidates]]
        if len(scores) > 1 and np.count_nonzero(scores == scores.max()) > 1:
            for i in np.flatnonzero(scores == scores.max()):
                scores[i] += self._task_share(tasks, candidates[i])
        return scores * MAX_SCORE * self.weight

    def _binpack(self, request: np.ndarray) -> np.ndarray:
        """Every HyperNode's binpacking score for `request`, by position: the weighted mean of
        (used + request) / allocatable over cpu, memory and the weighted resources requested;
        0 where that overflows."""
        cols = np.flatnonzero((self.weights > 0) & ((request > EPSILON) | (np.arange(len(request)) < 2)))
        if not len(cols):
            return np.zeros(len(self.names))
        alloc, wanted = self.alloc[:, cols], self.used[:, cols] + request[cols]
        share = np.divide(wanted, alloc, out=np.zeros_like(wanted), where=alloc > EPSILON)
        score = share @ self.weights[cols] / self.weights[cols].sum()
        return np.where(np.any(wanted > alloc + EPSILON, axis=1), 0.0, score)

    def _task_share(self, tasks: Collection[TaskInfo], hn: HyperNode) -> float:
        nodes = self.handle.nodes_by_name
        inside = sum(1 for t in tasks
                     if t.node and t.node in nodes and nodes[t.node].index < len(hn.mask) and hn.mask[nodes[t.node].index])
        return inside / len(tasks) if tasks else 1.0

    # --- node scores ------------------------------------------------------------------------

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        job = self.handle.jobs.get(task.job_uid)
        if job is None:
            return None
        if job.network_topology is not None:
            scores = self._near_job(job, rows)
        elif self.normal_pods and len(self.topo.tiers) > 1:
            scores = self._fill_domains(task, rows)
        else:
            return None
        return scores * MAX_SCORE * self.weight

    def _near_job(self, job: JobInfo, rows: np.ndarray) -> np.ndarray:
        placed = self._placed_in(job)
        scores = np.zeros(len(rows))
        if not placed:
            return scores
        leaf = self.topo.leaf_of[rows]  # position in topo.leaves, -1: in no lowest-tier HyperNode
        for i in np.unique(leaf[leaf >= 0]):
            scores[leaf == i] = self._tier_score(self.topo.leaves[i], placed)
        best = scores == scores.max()
        if np.count_nonzero(best) > 1:
            for i in np.unique(leaf[best & (leaf >= 0)]):
                scores[best & (leaf == i)] += self._task_share(job.tasks.values(), self.topo.hypernodes[self.topo.leaves[i]])
        return scores

    def _tier_score(self, leaf: str, placed: str) -> float:
        if not leaf:
            return 0.0
        if leaf == placed:
            return 1.0
        lca = self.topo.lca(leaf, placed)
        low, high = self.topo.tiers[0], self.topo.tiers[-1]
        if low == high:
            return 1.0
        tier = self.topo.hypernodes[lca].tier if lca else high + 1
        return (high - tier) / (high - low) if low <= tier <= high else 0.0

    def _fill_domains(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        hn_scores = self._binpack(task.resreq)
        total, weight_sum = np.zeros(len(rows)), 0.0
        for tier in range(self.topo.tiers[0], self.topo.tiers[-1] + 1):
            weight = self.fading ** (tier - 1)  # 0 ** 0 is 1, as in Go's math.Pow
            where = self.at_tier.get(tier)
            tier_score = np.ones(len(rows)) if where is None else np.where(where[rows] >= 0, hn_scores[where[rows]], 1.0)
            total += weight * tier_score
            weight_sum += weight
        return total / weight_sum if weight_sum > 0 else np.zeros(len(rows))
