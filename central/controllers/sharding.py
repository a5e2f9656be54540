"""Sharded scheduling: which scheduler replica owns which nodes (Volcano's NodeShard).

Off unless configured. Volcano's sharding controller writes one cluster-scoped NodeShard
(`shard.volcano.sh/v1alpha1`, named after the scheduler) whose `spec.nodesDesired` lists the
nodes that scheduler may place on; shards never share a node, so two replicas never judge the
same node's free capacity. Races that remain (a gang's pods, a node moving between shards)
are settled by the API server: conditional updates (409 on a stale resourceVersion) and the
bind's own conflict answer, never by a consensus of our own.

These are the pure decisions; the loop that lists nodes, leases and NodeShards and writes the
result runs on the one leader that also keeps enqueue and queue status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

GROUP = "shard.volcano.sh"
VERSION = "v1alpha1"
KIND = "NodeShard"
PLURAL = "nodeshards"
API_VERSION = f"{GROUP}/{VERSION}"
SHARD_LABEL = "caldera.sh/scheduler-shard"  # on each shard scheduler's Lease: the shard's name


def nodeshard(scheduler: str, nodes: Iterable[str], resource_version: str | None = None) -> dict[str, Any]:
    """The NodeShard object for `scheduler`; with a resourceVersion its PUT is conditional."""
    metadata: dict[str, Any] = {"name": scheduler}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata,
            "spec": {"nodesDesired": sorted(nodes)}}


def nodes_desired(shard: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The nodes a NodeShard gives its scheduler; None (no shard) means every node."""
    if shard is None:
        return None
    return frozenset((shard.get("spec") or {}).get("nodesDesired") or ())


def cpu_utilisation(requested_milli: int, allocatable_milli: int) -> float:
    """Requested over allocatable CPU, as Volcano's controller computes it from pod requests."""
    if allocatable_milli <= 0:
        return 1.0
    return min(1.0, max(0.0, requested_milli / allocatable_milli))


@dataclass
class LeaseWatch:
    """Which schedulers are alive, judged by their Leases as leader election judges them.

    A scheduler is dead when its Lease record has not changed for a whole lease duration as
    observed on our own monotonic clock (never by comparing its timestamps with ours: skew).
    """

    _seen: dict[str, tuple[str, float, float]] = field(default_factory=dict)

    def observe(self, scheduler: str, record_version: str, duration_s: float, now: float) -> None:
        previous = self._seen.get(scheduler)
        if previous is None or previous[0] != record_version:
            self._seen[scheduler] = (record_version, now, duration_s)

    def forget(self, scheduler: str) -> None:
        self._seen.pop(scheduler, None)

    def live(self, now: float) -> set[str]:
        return {name for name, (_, changed, duration) in self._seen.items() if now - changed < duration}

    def observe_leases(self, leases: Iterable[Mapping[str, Any]], now: float) -> set[str]:
        """Observe the shard schedulers' Leases (labelled `SHARD_LABEL`); the live shards.
        A released Lease (no holder) or a deleted one is dead at once."""
        present = set()
        for lease in leases:
            shard = ((lease.get("metadata") or {}).get("labels") or {}).get(SHARD_LABEL)
            spec = lease.get("spec") or {}
            if not shard or not spec.get("holderIdentity"):
                continue
            present.add(shard)
            self.observe(shard, str(lease["metadata"].get("resourceVersion")),
                         float(spec.get("leaseDurationSeconds") or 15), now)
        for gone in set(self._seen) - present:
            self.forget(gone)
        return self.live(now)


def assign(nodes: Mapping[str, float | None], live: Iterable[str],
           current: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Each live scheduler's nodes: sticky, dead schedulers' nodes freed, counts kept within one.

    `nodes` maps node name to CPU utilisation (None where unknown). A node keeps its current
    live owner (moving a node costs the owner its cached view). Free nodes (new, or a dead
    scheduler's) go one by one to the scheduler with the least free CPU when every node's
    utilisation is known, else to the one with fewest nodes, the emptiest nodes first. Last,
    while one scheduler has two more nodes than another, its emptiest node moves over, so a
    scheduler that joins gets its share.
    """
    schedulers = sorted(set(live))
    if not schedulers:
        return {}
    by_utilisation = all(u is not None for u in nodes.values())
    owned: dict[str, list[str]] = {s: [] for s in schedulers}
    taken: set[str] = set()
    for scheduler in schedulers:
        for node in sorted(current.get(scheduler, ())):
            if node in nodes and node not in taken:
                owned[scheduler].append(node)
                taken.add(node)

    def free_cpu(node: str) -> float:
        utilisation = nodes[node]
        return 1.0 - utilisation if utilisation is not None else 1.0

    def load(scheduler: str) -> tuple[float, int, str]:
        capacity = sum(free_cpu(n) for n in owned[scheduler]) if by_utilisation else 0.0
        return (capacity, len(owned[scheduler]), scheduler)

    for node in sorted((n for n in nodes if n not in taken), key=lambda n: (-free_cpu(n), n)):
        owned[min(schedulers, key=load)].append(node)
    while True:
        most = max(schedulers, key=lambda s: (len(owned[s]), s))
        least = min(schedulers, key=lambda s: (len(owned[s]), s))
        if len(owned[most]) - len(owned[least]) <= 1:
            break
        mover = max(owned[most], key=lambda n: (free_cpu(n), n))
        owned[most].remove(mover)
        owned[least].append(mover)
    return {s: sorted(ns) for s, ns in owned.items()}
