"""The GPU collector against a real driver (NVML). Skips, with the reason, where no GPU answers.

The fakes in test_gpu.py pin the collector's logic; this file checks what only real NVML can:
the names and shapes the library returns, the PCI bus id to sysfs NUMA mapping, a process of
ours seen holding memory, and the agent's whole report and metrics carrying the GPUs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nodeagent.agent import Agent
from nodeagent.collect.gpu import GpuProcess, NvmlGpuCollector, open_gpu_collector
from nodeagent.config import load_config
from nodeagent.exporter import MetricsServer
from nodeagent.health import Health
from nodeagent.host.paths import HostPaths

try:
    import pynvml

    pynvml.nvmlInit()
    GPUS = pynvml.nvmlDeviceGetCount()
except Exception as exc:  # no library, no driver
    GPUS, WHY = 0, f"no NVML here: {exc}"
else:
    WHY = "NVML answers but lists no GPU"

pytestmark = [pytest.mark.realgpu, pytest.mark.skipif(GPUS == 0, reason=WHY)]

# Holds ~1 GiB on GPU 0 through the driver API (ctypes on libcuda: no framework needed), then
# waits for stdin to close.
HOLD_MEMORY = textwrap.dedent("""
    import ctypes, sys
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx, ptr, dev = ctypes.c_void_p(), ctypes.c_uint64(), ctypes.c_int()
    assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev) == 0
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 30)) == 0
    print("held", flush=True)
    sys.stdin.read()
""")


def collector() -> NvmlGpuCollector:
    made = open_gpu_collector(HostPaths(), Health())
    assert isinstance(made, NvmlGpuCollector)
    return made


def test_every_gpu_is_described_as_the_driver_sees_it() -> None:
    report = collector().collect()
    assert report.status == "ok" and len(report.gpus) == GPUS
    for gpu in report.gpus:
        assert gpu.healthy, gpu.error
        assert gpu.uuid.startswith(("GPU-", "MIG-")) and gpu.model
        assert 0 < gpu.memory_used_bytes <= gpu.memory_total_bytes
        if gpu.mig_enabled:
            assert gpu.utilization_ratio is None
        else:
            assert gpu.utilization_ratio is not None and 0.0 <= gpu.utilization_ratio <= 1.0
        bus = pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByIndex(gpu.index)).busId
        bus = bus.decode() if isinstance(bus, bytes) else bus
        domain, _, rest = bus.lower().partition(":")
        sysfs = Path("/sys/bus/pci/devices") / f"{domain[-4:]}:{rest}"
        assert sysfs.exists(), f"the collector's sysfs path {sysfs} for {bus} is wrong"
        expected = int((sysfs / "numa_node").read_text())
        assert gpu.numa_node == max(expected, -1)


def test_a_process_holding_memory_is_listed_with_it() -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_MEMORY], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        deadline, mine = time.monotonic() + 10, list[GpuProcess]()
        while not mine and time.monotonic() < deadline:
            mine = [p for p in collector().collect().gpus[0].processes if p.pid == holder.pid]
            time.sleep(0.2)
        # In a container without the host's PID namespace NVML names host PIDs: say so, not pass.
        assert mine, f"pid {holder.pid} not among GPU 0's processes (PID namespace: {os.readlink('/proc/self/ns/pid')})"
        assert mine[0].used_memory_bytes >= 1 << 30
        assert mine[0].pod_uid == ""  # not a pod's process
    finally:
        holder.communicate("")


def test_the_agent_reports_and_exports_the_gpus() -> None:
    once = subprocess.run([sys.executable, "-m", "nodeagent", "--once", "--output", "json"],
                          capture_output=True, text=True, timeout=120, check=True)
    gpus = json.loads(once.stdout)["gpus"]
    assert gpus["status"] == "ok" and len(gpus["gpus"]) == GPUS
    assert {g["uuid"] for g in gpus["gpus"]} == {g.uuid for g in collector().collect().gpus}

    agent = Agent(load_config(None, {"exporter.address": "127.0.0.1", "exporter.port": 0}))
    agent.tick(enforce=False)
    server = MetricsServer(agent, "127.0.0.1", 0, 100)
    port = server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    finally:
        server.stop()
    samples = {f.name: f.samples for f in text_string_to_metric_families(text)}
    info = list(samples["nodeagent_gpu_info"])
    assert len(info) == GPUS and {s.labels["uuid"] for s in info} == {g["uuid"] for g in gpus["gpus"]}
    assert all(s.value > 0 for s in samples["nodeagent_gpu_memory_total_bytes"])
