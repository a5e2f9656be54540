"""The "hardware" of a simulated node, as files the real node agent reads: /sys CPU and NUMA
topology, /proc stat and meminfo, the kubelet's config, an empty cgroup v1 tree. The agent
runs its own collectors over these trees, so what it streams is what it measured."""

from __future__ import annotations

from pathlib import Path

from central.resources.quantity import parse_quantity


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _cpulist(cpus: range) -> str:
    return f"{cpus.start}-{cpus.stop - 1}" if len(cpus) > 1 else str(cpus.start)


def write_host(root: Path, cpus: int, memory: str, numa: int) -> dict[str, str]:
    """Write the trees under `root`; return the agent's path settings pointing at them."""
    numa = max(1, min(numa, cpus))
    per_node = cpus // numa
    mem_kib = int(parse_quantity(memory)) // 1024
    sys_root, proc, kubelet, cgroup = root / "sys", root / "proc", root / "kubelet", root / "cgroup"
    _write(sys_root / "devices/system/cpu/present", _cpulist(range(cpus)) + "\n")
    _write(sys_root / "devices/system/cpu/online", _cpulist(range(cpus)) + "\n")
    for node in range(numa):
        span = range(node * per_node, cpus if node == numa - 1 else (node + 1) * per_node)
        for cpu in span:
            _write(sys_root / f"devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{node}\n")
            _write(sys_root / f"devices/system/cpu/cpu{cpu}/topology/core_id", f"{cpu - span.start}\n")
        distances = " ".join("10" if other == node else "21" for other in range(numa))
        base = sys_root / f"devices/system/node/node{node}"
        _write(base / "cpulist", _cpulist(span) + "\n")
        _write(base / "distance", distances + "\n")
        _write(base / "meminfo", f"Node {node} MemTotal: {mem_kib // numa} kB\nNode {node} MemFree: {mem_kib // numa} kB\n")
    idle = " ".join(["0 0 0 1000 0 0 0 0 0 0"])
    _write(proc / "stat", f"cpu  {idle}\n" + "".join(f"cpu{c} {idle}\n" for c in range(cpus)))
    _write(proc / "meminfo", f"MemTotal: {mem_kib} kB\nMemFree: {mem_kib} kB\nMemAvailable: {mem_kib} kB\n")
    _write(proc / "loadavg", "0.00 0.00 0.00 1/100 1\n")
    _write(kubelet / "config.yaml", "kind: KubeletConfiguration\ncpuManagerPolicy: none\ntopologyManagerPolicy: none\n")
    for controller in ("cpu", "cpuacct", "cpuset", "memory"):
        # The kubelet's QoS cgroups, without pod cgroups: the agent reports simulated pods with
        # unknown usage, and stays ready (no kubepods at all would read as a wrong cgroup root).
        (cgroup / controller / "kubepods" / "besteffort").mkdir(parents=True, exist_ok=True)
        (cgroup / controller / "kubepods" / "burstable").mkdir(parents=True, exist_ok=True)
    return {"paths.sys_root": str(sys_root), "paths.proc_root": str(proc),
            "paths.kubelet_root": str(kubelet), "paths.cgroup_root": str(cgroup), "paths.cgroup_version": "1",
            "paths.pod_resources_socket": str(kubelet / "pod-resources" / "kubelet.sock")}  # none: the files say
