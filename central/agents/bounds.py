"""An agent report checked before the scheduler's cache sees it: node data is untrusted input.

A broken clock or a compromised node must hurt its own node alone. The stream already makes
sure an agent reports only about its node and caps each message's size; this checks what the
report says against fixed bounds and against the Node object the kubelet registered:

- the report's time lies between 1970 and 9999 (a `datetime` can hold it) and no more than
  `MAX_CLOCK_AHEAD` ahead of the scheduler's clock (a report from the future would keep a
  silent node fresh for as long as it is ahead);
- CPUs: the NUMA cells list no more CPUs than the Node's `status.capacity.cpu`, each CPU id
  below `MAX_CPU_ID` (Linux's NR_CPUS) and in one cell only, free CPUs among the cell's own;
- NUMA cells: no more than the Node has CPUs (a cell without CPUs still needs an id), each id
  once and in [0, `MAX_CPU_ID`);
- GPUs: no more than the Node's GPU capacity (`nvidia.com/gpu` or `volcano.sh/gpu-number`;
  none advertised allows none), each with at most `MAX_MIG_DEVICES` MIG slices, memory used
  no more than memory total, which is at most `MAX_GPU_MEMORY`;
- memory: the cells' total no more than the Node's `status.capacity.memory`, free no more
  than total; batch resources no more than the Node's capacity; usage figures finite, not
  negative, and at most the capacity with `USAGE_SLACK` for a window's sampling jitter;
- short strings (kubelet policies, the GPU status) at most `MAX_LABEL_CHARS`.

A report that breaks any of these raises InputError naming the node and field; the feed
then faults the node (`central.agents.feed`). Each check costs a `len` or one pass over the
lists the conversion walks anyway.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from central.agents.nodedata import to_node_data
from central.errors import InputError, shown
from central.model.nodedata import NodeData
from central.model.objects import NodeInfo
from nodeagent.api.v1 import agent_pb2 as pb

MAX_CLOCK_AHEAD = timedelta(minutes=5)  # clock skew between a node and the scheduler tolerated
MAX_CPU_ID = 8192  # Linux's largest NR_CPUS
MAX_MIG_DEVICES = 16  # NVIDIA's MIG makes at most 7 instances per card today
MAX_GPU_MEMORY = float(1 << 40)  # 1 TiB per card
MAX_LABEL_CHARS = 64
USAGE_SLACK = 1.1
GPU_CAPACITY = ("nvidia.com/gpu", "volcano.sh/gpu-number")


def checked_node_data(report: pb.NodeReport, node: NodeInfo, now: datetime | None = None) -> NodeData:
    """The report as NodeData once it fits `node`; InputError names the first field that does not.
    The list lengths are checked on the message, before the conversion walks the lists."""
    capacity = node.capacity or node.allocatable
    cpus = math.ceil(capacity.get("cpu", 0.0) / 1000)
    gpus = round(max(capacity.get(name, 0.0) for name in GPU_CAPACITY) / 1000)
    where = f"Node {report.node_name}: agent report"
    cells = report.topology.numa_nodes
    if len(cells) > max(cpus, 1):
        raise InputError(f"{where} topology.numa_nodes", f"{len(cells)} NUMA nodes on a Node with {cpus} CPUs")
    if sum(len(cell.cpus) + len(cell.free_cpus) for cell in cells) > 2 * cpus:
        raise InputError(f"{where} topology.numa_nodes[].cpus", f"the cells list more CPUs than the Node's "
                         f"capacity ({cpus})")
    if len(report.gpus.gpus) > gpus:
        raise InputError(f"{where} gpus.gpus", f"{len(report.gpus.gpus)} GPUs on a Node with a capacity of {gpus}")
    if any(len(gpu.mig_devices) > MAX_MIG_DEVICES for gpu in report.gpus.gpus):
        raise InputError(f"{where} gpus.gpus[].mig_devices", f"more than {MAX_MIG_DEVICES} MIG devices on a card")
    data = to_node_data(report)
    _check_node_data(data, where, cpus, capacity.get("memory", 0.0), now)
    return data


def _check_node_data(data: NodeData, where: str, cpus: int, memory: float, now: datetime | None) -> None:
    if now is not None and data.reported_at - now > MAX_CLOCK_AHEAD:
        raise InputError(f"{where} timestamp_unix_ms", f"{data.reported_at.isoformat()} is more than "
                         f"{MAX_CLOCK_AHEAD.total_seconds():.0f}s ahead of the scheduler's clock ({now.isoformat()})")
    for field, text in (("topology.cpu_manager_policy", data.cpu_manager_policy),
                        ("topology.topology_manager_policy", data.topology_manager_policy),
                        ("gpus.status", data.gpu_status)):
        if len(text) > MAX_LABEL_CHARS:
            raise InputError(f"{where} {field}", f"{shown(text)} is longer than {MAX_LABEL_CHARS} characters")
    _check_numa(data, where, cpus, memory)
    _check_gpus(data, where)
    for field, value, most in (("resources.batch_cpu_millicores", data.batch_cpu, cpus * 1000),
                               ("resources.batch_memory_bytes", data.batch_memory, memory),
                               ("resources.cpu_usage_cores.avg", data.cpu_usage, cpus * 1000 * USAGE_SLACK),
                               ("resources.memory_usage_bytes.avg", data.memory_usage, memory * USAGE_SLACK)):
        if value is not None and not (math.isfinite(value) and 0 <= value <= most):
            raise InputError(f"{where} {field}", f"{value:g} is outside 0 to the Node's capacity ({most:g})")


def _check_numa(data: NodeData, where: str, cpus: int, memory: float) -> None:
    ids: set[int] = set()
    seen: set[int] = set()
    listed = 0
    total_memory = 0.0
    for cell in data.numa:
        at = f"{where} topology.numa_nodes[id={cell.id}]"
        if not 0 <= cell.id < MAX_CPU_ID or cell.id in ids:
            raise InputError(f"{at}.id", "is out of range or repeated")
        ids.add(cell.id)
        listed += len(cell.cpus)
        if listed > cpus:
            raise InputError(f"{at}.cpus", f"the cells list more CPUs than the Node's capacity ({cpus})")
        if any(not 0 <= cpu < MAX_CPU_ID for cpu in cell.cpus) or not seen.isdisjoint(cell.cpus):
            raise InputError(f"{at}.cpus", f"a CPU id is outside 0-{MAX_CPU_ID - 1} or in another cell too")
        seen |= cell.cpus
        if not cell.free_cpus <= cell.cpus:
            raise InputError(f"{at}.free_cpus", "names CPUs the cell does not have")
        if not 0 <= cell.memory_free <= cell.memory_total:
            raise InputError(f"{at}.memory_free_bytes", "is more than the cell's memory")
        total_memory += cell.memory_total
    if total_memory > memory:
        raise InputError(f"{where} topology.numa_nodes[].memory_total_bytes",
                         f"the cells hold {total_memory:g} bytes, more than the Node's capacity ({memory:g})")


def _check_gpus(data: NodeData, where: str) -> None:
    for gpu in data.gpus:
        at = f"{where} gpus.gpus[index={gpu.index}]"
        if not 0 <= gpu.memory_used <= gpu.memory_total <= MAX_GPU_MEMORY:
            raise InputError(f"{at}.memory_used_bytes", f"used {gpu.memory_used:g} of {gpu.memory_total:g} bytes "
                             f"(at most {MAX_GPU_MEMORY:g})")
        if sum(gpu.mig_slices) > gpu.memory_total:
            raise InputError(f"{at}.mig_devices", "the slices hold more memory than the card")
