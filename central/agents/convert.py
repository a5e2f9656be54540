"""Agent reports (protobuf from the stream, or the JSON `caldera agent --once` prints) to the
scheduling core's plain `NodeData`.

Units follow NodeData: CPU in millicores, memory in bytes, usage as the window average.
A report without a resources section (never the case for a merged one) gives unknown usage.
Free CPUs of a NUMA cell are its online CPUs minus those the kubelet pinned exclusively.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from google.protobuf import json_format

from central.errors import InputError
from central.model.nodedata import GpuCard, NodeData, NumaCell
from nodeagent.api.v1 import agent_pb2 as pb


def node_data(report: pb.NodeReport, reported_at: datetime | None = None) -> NodeData:
    """`reported_at` defaults to the agent's own timestamp; the receiver passes its receive time."""
    at = reported_at or datetime.fromtimestamp(report.timestamp_unix_ms / 1000, tz=timezone.utc)
    topo, res = report.topology, report.resources
    has_res = report.HasField("resources")
    return NodeData(
        node=report.node_name,
        reported_at=at,
        cpu_manager_policy=topo.cpu_manager_policy,
        topology_manager_policy=topo.topology_manager_policy,
        numa=tuple(
            NumaCell(id=n.id, cpus=frozenset(n.cpus), free_cpus=frozenset(n.cpus) - frozenset(n.exclusive_cpus),
                     memory_total=float(n.memory_total_bytes), memory_free=float(n.memory_free_bytes))
            for n in topo.numa_nodes
        ),
        gpus=tuple(
            GpuCard(index=g.index, memory_total=float(g.memory_total_bytes), memory_used=float(g.memory_used_bytes),
                    healthy=g.healthy, mig_slices=tuple(float(m.memory_total_bytes) for m in g.mig_devices))
            for g in report.gpus.gpus
        ),
        gpu_status=report.gpus.status or "none",
        cpu_usage=res.cpu_usage_cores.avg * 1000 if has_res else None,
        memory_usage=res.memory_usage_bytes.avg if has_res else None,
        batch_cpu=res.batch_cpu_cores * 1000,
        batch_memory=float(res.batch_memory_bytes),
    )


def node_data_from_json(doc: Any, where: str = "node report") -> NodeData:
    """A report as printed by `caldera agent --once --output json`."""
    report = pb.NodeReport()
    try:
        json_format.ParseDict(doc, report, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise InputError(where, f"not a node report: {exc}") from None
    if not report.node_name:
        raise InputError(f"{where}: node_name", "missing")
    return node_data(report)
