"""Agent reports (protobuf, or the JSON `caldera agent --once` prints) as the scheduler's NodeData.

This is the one place that knows both the wire contract and the scheduling model, so the
scheduling core stays free of protobuf and gRPC.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from google.protobuf import json_format

from central.errors import InputError
from central.manifests import read_file
from central.model.nodedata import GpuCard, NodeData, NumaCell
from nodeagent.api.v1 import agent_pb2 as pb

MAX_TIMESTAMP_MS = int((datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
                        - datetime(1970, 1, 1, tzinfo=timezone.utc)) / timedelta(milliseconds=1))


def reported_at(node: str, timestamp_unix_ms: int) -> datetime:
    """The report's time; InputError outside 1970-9999 (where `datetime` raises OverflowError,
    ValueError or OSError, depending on the platform)."""
    if not 0 <= timestamp_unix_ms <= MAX_TIMESTAMP_MS:
        raise InputError(f"Node {node}: agent report timestamp_unix_ms",
                         f"{timestamp_unix_ms} is outside 1970-01-01 to 9999-12-31")
    return datetime.fromtimestamp(timestamp_unix_ms / 1000, tz=timezone.utc)


def to_node_data(report: pb.NodeReport) -> NodeData:
    """The report as NodeData; InputError for a time a `datetime` cannot hold. Bounds against
    the Node are `central.agents.bounds`'s business."""
    topology, resources = report.topology, report.resources
    numa = tuple(
        NumaCell(id=cell.id, cpus=frozenset(cell.cpus),
                 free_cpus=frozenset(cell.free_cpus if cell.free_cpus_known else cell.cpus),
                 memory_total=float(cell.memory_total_bytes), memory_free=float(cell.memory_free_bytes))
        for cell in topology.numa_nodes)
    gpus = tuple(
        GpuCard(index=g.index, memory_total=float(g.memory_total_bytes), memory_used=float(g.memory_used_bytes),
                healthy=g.healthy, mig_slices=tuple(float(m.memory_total_bytes) for m in g.mig_devices),
                uuid=g.uuid, numa=g.numa_node)
        for g in report.gpus.gpus)
    has_cpu = report.HasField("resources") and resources.HasField("cpu_usage_cores")
    has_memory = report.HasField("resources") and resources.HasField("memory_usage_bytes")
    return NodeData(
        node=report.node_name,
        reported_at=reported_at(report.node_name, report.timestamp_unix_ms),
        cpu_manager_policy=topology.cpu_manager_policy,
        topology_manager_policy=topology.topology_manager_policy,
        numa=numa, gpus=gpus, gpu_status=report.gpus.status or "none",
        cpu_usage=resources.cpu_usage_cores.avg * 1000 if has_cpu else None,
        memory_usage=resources.memory_usage_bytes.avg if has_memory else None,
        batch_cpu=float(resources.batch_cpu_millicores), batch_memory=float(resources.batch_memory_bytes),
    )


def read_node_reports(paths: Iterable[str]) -> list[NodeData]:
    """Reports from JSON files (one report each) or directories of them."""
    out = []
    for path in paths:
        root = Path(path)
        files = sorted(root.glob("*.json")) if root.is_dir() else [root]
        if not files:
            raise InputError(path, "no .json node reports in this directory")
        for file in files:
            out.append(to_node_data(_parse(file)))
    return out


def _parse(file: Path) -> pb.NodeReport:
    try:
        raw = json.loads(read_file(file))  # bytes: UTF-8, -16 or -32, as JSON allows
    except UnicodeDecodeError as err:
        raise InputError(str(file), f"not UTF-8, -16 or -32 text: {err.reason} at byte {err.start}") from None
    except json.JSONDecodeError as err:
        raise InputError(str(file), f"malformed JSON at line {err.lineno}: {err.msg}") from None
    except RecursionError:
        raise InputError(str(file), "nested too deep") from None
    try:
        report: pb.NodeReport = json_format.ParseDict(raw, pb.NodeReport())
    except json_format.ParseError as err:
        raise InputError(str(file), f"not a node report: {str(err).splitlines()[0]}") from None
    if not report.node_name:
        raise InputError(f"{file}: node_name", "is required")
    return report
