"""End to end: agents on fake hosts stream to the scheduler, which places by what they see;
the chosen agent then pins the pod. Real gRPC over loopback, real agent loops."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from central.agents import NodeReportStore, ReceiverServer
from central.agents.feed import NodeDataFeed
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from nodeagent.agent import Agent
from nodeagent.config import load_config as load_agent_config
from nodeagent.pods import PodInfo, StaticPodSource
from tests.nodeagent.fakes import FakeDevice, FakeNvml, fake_proc, write
from tests.waiting import eventually

POD_UID = "33333333-3333-3333-3333-333333333333"
CONF = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}, {name: numa-aware},
            {name: deviceshare, arguments: {deviceshare.GPUSharingEnable: true, deviceshare.GPUNumberEnable: true}}]
"""


def numa_host(root: Path, cpu_manager: str, shared: str | None) -> dict[str, str]:
    """A host of 2 NUMA nodes x 8 CPUs; the kubelet's CPU manager state shares `shared`."""
    sys = root / "sys"
    write(sys, "devices/system/cpu/present", "0-15\n")
    write(sys, "devices/system/cpu/online", "0-15\n")
    for cpu in range(16):
        write(sys, f"devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{cpu // 8}\n")
        write(sys, f"devices/system/cpu/cpu{cpu}/topology/core_id", f"{cpu % 8}\n")
    for node, cpus in ((0, "0-7"), (1, "8-15")):
        write(sys, f"devices/system/node/node{node}/cpulist", cpus + "\n")
        write(sys, f"devices/system/node/node{node}/distance", "10 21\n" if node == 0 else "21 10\n")
        write(sys, f"devices/system/node/node{node}/meminfo",
              f"Node {node} MemTotal: 33554432 kB\nNode {node} MemFree: 30000000 kB\n")
    kubelet = root / "kubelet"
    policy = "single-numa-node" if cpu_manager == "static" else "none"
    write(kubelet, "config.yaml", f"kind: KubeletConfiguration\ncpuManagerPolicy: {cpu_manager}\ntopologyManagerPolicy: {policy}\n")
    if shared is not None:
        write(kubelet, "cpu_manager_state", json.dumps({"policyName": "static", "defaultCpuSet": shared, "entries": {}}))
    cgroup = root / "cg"
    (cgroup / "cpuset").mkdir(parents=True)
    return {"paths.sys_root": str(sys), "paths.proc_root": str(fake_proc(root / "proc")),
            "paths.cgroup_root": str(cgroup), "paths.kubelet_root": str(kubelet)}


def start_agent(name: str, host: dict[str, str], port: int, nvml: FakeNvml | None = None,
                ) -> tuple[Agent, threading.Event, threading.Thread]:
    cfg = load_agent_config(None, {"node.name": name, **host, "stream.server": f"127.0.0.1:{port}",
                                   "stream.insecure": True, "collect.period_s": 0.05, "collect.window_s": 0.5,
                                   "collect.topology_period_s": 0.05, "collect.gpu": nvml is not None,
                                   "qos.enabled": False, "exporter.address": "127.0.0.1", "exporter.port": 0})
    agent = Agent(cfg, pod_source=StaticPodSource([]), nvml=nvml)
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    thread.start()
    return agent, stop, thread


def test_numa_placement_from_agent_reports_then_pinning(tmp_path: Path) -> None:
    store = NodeReportStore()
    receiver = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = receiver.start()
    # node-a: the kubelet pins, and no NUMA node has 6 CPUs left; node-b: the agent pins, all free.
    host_a = numa_host(tmp_path / "a", "static", "0-3,8-11")
    host_b = numa_host(tmp_path / "b", "none", None)
    # node-a also has 4 GPUs, the first failing.
    gpus = FakeNvml([FakeDevice("GPU-0", "0:3B:00.0", failing=True), FakeDevice("GPU-1", "0:5E:00.0"),
                     FakeDevice("GPU-2", "0:86:00.0"), FakeDevice("GPU-3", "0:AF:00.0")])
    agents = [start_agent("node-a", host_a, port, gpus), start_agent("node-b", host_b, port)]
    try:
        eventually(lambda: all((r := store.latest(n)) is not None and len(r.topology.numa_nodes) == 2
                               for n in ("node-a", "node-b")), timeout=30, what="both agents' topology")
        eventually(lambda: len(store.latest("node-a").gpus.gpus) == 4, timeout=30, what="node-a's GPUs")
        cache = ClusterCache()
        gpu_alloc = {"volcano.sh/gpu-number": "4", "volcano.sh/gpu-memory": "64000"}
        for name in ("node-a", "node-b"):
            alloc = {"cpu": "16", "memory": "64Gi", **(gpu_alloc if name == "node-a" else {})}
            cache.apply({"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}})
        assert NodeDataFeed(store).sync(cache) == 2
        cache.apply({"kind": "Pod", "metadata": {"name": "db", "namespace": "ns", "uid": POD_UID,
                                                  "annotations": {"volcano.sh/numa-topology-policy": "single-numa-node"}},
                     "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                         "requests": {"cpu": "6", "memory": "1Gi"}, "limits": {"cpu": "6", "memory": "1Gi"}}}]}})
        for name, requests in (("share-0", {"volcano.sh/gpu-memory": "6000"}), ("share-1", {"volcano.sh/gpu-memory": "6000"}),
                               ("whole", {"volcano.sh/gpu-number": "2"})):
            cache.apply({"kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
                         "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {
                             "requests": {"cpu": "1", "memory": "1Gi", **requests}}}]}})
        result = run_cycle(cache, load_config(CONF))
        assert result.binds["ns/db"] == "node-b"
        # GPU-share pods pack onto one healthy card by memory, skipping the failing card 0;
        # the whole-card job gets two cards of its own.
        cards = {pod: result.annotations[pod]["volcano.sh/gpu-index"] for pod in ("ml/share-0", "ml/share-1", "ml/whole")}
        assert cards == {"ml/share-0": "1", "ml/share-1": "1", "ml/whole": "2,3"}
        cpuset = result.annotations["ns/db"]["caldera.sh/cpuset"]
        assert cpuset == "0-5"

        # The kubelet starts the pod on node-b; its agent sees the annotation and pins it.
        pod_dir = Path(host_b["paths.cgroup_root"]) / "cpuset" / "kubepods" / f"pod{POD_UID}"
        for d in (pod_dir, pod_dir / "ctr"):
            write(d, "cpuset.cpus", "0-15")
        agent_b = agents[1][0]
        agent_b.pod_source = StaticPodSource([PodInfo("ns", "db", POD_UID, qos_class="Guaranteed", qos_level="LC", cpuset=cpuset)])
        # the agent narrows the container first, then the pod (a cpuset parent must hold its children's)
        eventually(lambda: all((d / "cpuset.cpus").read_text() == cpuset for d in (pod_dir / "ctr", pod_dir)),
                   timeout=30, what="the agent to pin the pod and its container")
    finally:
        for _, stop, thread in agents:
            stop.set()
            thread.join(timeout=10)
        receiver.stop()
