"""A node agent's report as the stream tests offer it."""

from __future__ import annotations

from nodeagent.collect.gpu import GpuReport
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.topology import NumaNode, Topology
from nodeagent.collect.window import Stat
from nodeagent.report import NodeSnapshot


def snapshot(cpu: float) -> NodeSnapshot:
    """An 8-CPU, one-NUMA-node, GPU-less node using `cpu` cores."""
    return NodeSnapshot(
        cpu_capacity_cores=8, cpu_allocatable_cores=7.5, memory_allocatable_bytes=30 << 30,
        usage=NodeUsage(Stat(cpu, cpu, cpu), Stat(1 << 30, 1 << 30, 1 << 30), 32 << 30),
        topology=Topology(1, 4, 8, list(range(8)), [], [NumaNode(0, list(range(8)), 32 << 30, 16 << 30, [10])]),
        gpus=GpuReport("none"),
    )
