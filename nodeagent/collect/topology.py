"""NUMA and CPU topology from sysfs (/sys/devices/system/{node,cpu}); no lscpu needed.

Topology rarely changes, so the agent reads it on a slow period and the stream sends it
only when it differs. Garbage in one file drops that one fact, counted in Health.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nodeagent.health import Health
from nodeagent.host.paths import HostPaths, parse_cpu_list, read_int, read_text

NAME = "topology"
_MEMINFO = re.compile(r"^Node\s+\d+\s+(\w+):\s+(\d+)\s*kB", re.MULTILINE)


@dataclass
class NumaNode:
    id: int
    cpus: list[int]
    memory_total_bytes: int = 0
    memory_free_bytes: int = 0
    distances: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class CpuInfo:
    """Where one CPU sits: its core, socket, NUMA node and L3 cache (-1: unknown)."""
    id: int
    core: int = -1
    socket: int = -1
    numa: int = -1
    l3: int = -1


@dataclass
class Topology:
    sockets: int = 0
    cores: int = 0
    threads: int = 0
    online_cpus: list[int] = field(default_factory=list)
    offline_cpus: list[int] = field(default_factory=list)
    numa_nodes: list[NumaNode] = field(default_factory=list)
    cpus: list[CpuInfo] = field(default_factory=list)


def _l3_id(cpu_dir: Path, health: Health) -> int:
    """The L3 cache's id (older kernels have no `id`: the first CPU sharing it stands in)."""
    for index in sorted(cpu_dir.glob("cache/index[0-9]*")):
        if (read_text(index / "level", health, NAME) or "").strip() != "3":
            continue
        if (index / "id").exists():
            value = read_int(index / "id", health, NAME)
            return -1 if value is None else value
        shared = read_text(index / "shared_cpu_list", health, NAME)
        try:
            return min(parse_cpu_list(shared or ""), default=-1)
        except ValueError:
            health.error(NAME, "garbled_file", f"{index}/shared_cpu_list")
            return -1
    return -1


def _cpu_list(paths: HostPaths, rel: str, health: Health) -> list[int] | None:
    text = read_text(paths.sys_root / rel, health, NAME)
    if text is None:
        return None
    try:
        return parse_cpu_list(text)
    except ValueError as exc:
        health.error(NAME, "garbled_file", f"{rel}: {exc}")
        return None


def read_topology(paths: HostPaths, health: Health) -> Topology:
    cpu_dir = paths.sys_root / "devices/system/cpu"
    present = _cpu_list(paths, "devices/system/cpu/present", health)
    if present is None:
        present = sorted(int(p.name[3:]) for p in cpu_dir.glob("cpu[0-9]*"))
    online = _cpu_list(paths, "devices/system/cpu/online", health)
    online = sorted(set(present if online is None else online) & set(present))
    topo = Topology(online_cpus=online, offline_cpus=sorted(set(present) - set(online)))
    packages: set[int] = set()
    cores: set[tuple[int, int]] = set()
    infos = []
    for cpu in online:
        package = read_int(cpu_dir / f"cpu{cpu}/topology/physical_package_id", health, NAME)
        core = read_int(cpu_dir / f"cpu{cpu}/topology/core_id", health, NAME)
        infos.append(CpuInfo(cpu, -1 if core is None else core, -1 if package is None else package,
                             l3=_l3_id(cpu_dir / f"cpu{cpu}", health)))
        if package is None or core is None:
            continue
        packages.add(package)
        cores.add((package, core))
    topo.sockets, topo.cores, topo.threads = len(packages), len(cores), len(online)
    topo.numa_nodes = _numa_nodes(paths, health, set(online))
    numa_of = {c: n.id for n in topo.numa_nodes for c in n.cpus}
    topo.cpus = [CpuInfo(i.id, i.core, i.socket, numa_of.get(i.id, -1), i.l3) for i in infos]
    health.ok(NAME)
    return topo


def _numa_nodes(paths: HostPaths, health: Health, online: set[int]) -> list[NumaNode]:
    node_dir = paths.sys_root / "devices/system/node"
    ids = sorted(int(p.name[4:]) for p in node_dir.glob("node[0-9]*"))
    nodes = []
    for nid in ids:
        cpus = _cpu_list(paths, f"devices/system/node/node{nid}/cpulist", health) or []
        node = NumaNode(id=nid, cpus=[c for c in cpus if c in online])
        meminfo = read_text(node_dir / f"node{nid}/meminfo", health, NAME)
        if meminfo is not None:
            fields = {k: int(v) * 1024 for k, v in _MEMINFO.findall(meminfo)}
            if "MemTotal" not in fields:
                health.error(NAME, "garbled_file", f"node{nid}/meminfo has no MemTotal")
            node.memory_total_bytes = fields.get("MemTotal", 0)
            # Node meminfo has no MemAvailable: free + file pages + reclaimable slab.
            node.memory_free_bytes = sum(
                fields.get(k, 0) for k in ("MemFree", "FilePages", "SReclaimable")
            )
            node.memory_free_bytes = min(node.memory_free_bytes, node.memory_total_bytes)
        distance = read_text(node_dir / f"node{nid}/distance", health, NAME)
        if distance is not None:
            try:
                node.distances = [int(d) for d in distance.split()]
            except ValueError:
                health.error(NAME, "garbled_file", f"node{nid}/distance: {distance[:40]!r}")
        nodes.append(node)
    return nodes
