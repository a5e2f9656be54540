"""What a node's agent reports, as the scheduling core sees it.

Plain data, free of gRPC and protobuf: `central.agents` converts the agents' reports (from
the stream, or the JSON `caldera agent --once` prints) into these. The cache keeps the latest
per node; plugins that use it say what they do without it, and a report older than the
staleness limit counts as no report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class NumaCell:
    id: int
    cpus: frozenset[int]  # online CPUs of this NUMA node
    free_cpus: frozenset[int]  # not held exclusively by a container (kubelet CPU manager)
    memory_total: float  # bytes
    memory_free: float


@dataclass(frozen=True, slots=True)
class GpuCard:
    index: int
    memory_total: float  # bytes
    memory_used: float
    healthy: bool
    mig_slices: tuple[float, ...] = ()  # memory of each MIG device when MIG is on
    uuid: str = ""
    numa: int = -1  # the NUMA node of its PCI device; -1 unknown


@dataclass(frozen=True, slots=True)
class NodeData:
    node: str
    reported_at: datetime
    cpu_manager_policy: str = ""  # kubelet: none | static; "" unknown
    topology_manager_policy: str = ""  # kubelet: none | best-effort | restricted | single-numa-node
    numa: tuple[NumaCell, ...] = ()
    gpus: tuple[GpuCard, ...] = ()
    gpu_status: str = "none"  # ok | none (no driver) | error
    cpu_usage: float | None = None  # millicores, averaged over the agent's window
    memory_usage: float | None = None  # bytes, working set averaged over the window
    batch_cpu: float = 0.0  # millicores online pods leave unused (oversubscription)
    batch_memory: float = 0.0  # bytes

    def age(self, now: datetime) -> float:
        return (now - self.reported_at).total_seconds()
