from __future__ import annotations

from pathlib import Path

from nodeagent.collect.gpu import NullGpuCollector, NvmlGpuCollector, open_gpu_collector
from nodeagent.health import Health
from nodeagent.host.paths import HostPaths
from tests.nodeagent.fakes import FakeDevice, FakeNvml, write

UID = "0b3c5f1e-1234-4abc-9def-0123456789ab"


def four_gpus() -> FakeNvml:
    return FakeNvml([
        FakeDevice("GPU-0", "00000000:3B:00.0", util=37, processes=((4242, 1 << 30),)),
        FakeDevice("GPU-1", "00000000:86:00.0", mig=True),
        FakeDevice("GPU-2", "00000000:AF:00.0", failing=True),
        FakeDevice("GPU-3", "00000000:D8:00.0", util=0),
    ])


def test_four_gpus_one_mig_one_failing(tmp_path: Path) -> None:
    sys_root, proc_root = tmp_path / "sys", tmp_path / "proc"
    write(sys_root, "bus/pci/devices/0000:3b:00.0/numa_node", "0\n")
    write(sys_root, "bus/pci/devices/0000:86:00.0/numa_node", "1\n")
    write(sys_root, "bus/pci/devices/0000:d8:00.0/numa_node", "-1\n")
    write(proc_root, "4242/cgroup",
          f"12:cpu:/kubepods/burstable/pod{UID}/abc\n")
    health = Health()
    collector = open_gpu_collector(HostPaths(sys_root=sys_root, proc_root=proc_root), health, four_gpus())
    assert isinstance(collector, NvmlGpuCollector)
    report = collector.collect()
    assert report.status == "ok" and len(report.gpus) == 4
    plain, mig, failing, idle = report.gpus
    assert plain.utilization_ratio == 0.37 and plain.numa_node == 0 and plain.healthy
    assert plain.processes[0].pod_uid == UID and plain.processes[0].used_memory_bytes == 1 << 30
    assert mig.mig_enabled and mig.utilization_ratio is None  # unknown, not zero
    assert [m.index for m in mig.mig_devices] == [0, 1] and mig.numa_node == 1
    assert not failing.healthy and "lost" in failing.error
    assert idle.utilization_ratio == 0.0 and idle.numa_node == -1
    assert health.errors[("gpu", "device_error")] == 1


def test_no_nvml_gives_the_null_collector(tmp_path: Path) -> None:
    health = Health()
    collector = open_gpu_collector(HostPaths(), health, FakeNvml([], init_error=True))
    assert isinstance(collector, NullGpuCollector)
    assert collector.collect().status == "none"
    assert health.errors[("gpu", "nvml_unavailable")] == 1


def test_real_pynvml_without_a_driver_degrades() -> None:
    # This machine has no GPU: the real library must yield the null collector, never raise.
    collector = open_gpu_collector(HostPaths(), Health())
    assert collector.collect().status in ("none", "ok")


def test_xid_marks_a_gpu_unhealthy_until_it_recovers(tmp_path: Path) -> None:
    nvml, health, now = four_gpus(), Health(), [0.0]
    collector = NvmlGpuCollector(nvml, HostPaths(sys_root=tmp_path), health, xid_recovery_s=300,
                                 clock=lambda: now[0])
    assert nvml.registered == ["GPU-0", "GPU-1", "GPU-3"]  # the failing GPU cannot register
    assert health.errors[("gpu", "xid_events_unsupported")] == 1
    nvml.xid(3, 79)  # fallen off the bus: hardware
    nvml.xid(0, 13)  # an application's fault: ignored
    gpus = collector.collect().gpus
    assert not gpus[3].healthy and gpus[3].error == "Xid 79" and gpus[0].healthy
    assert collector.xid_errors == {("GPU-3", 79): 1}
    now[0] = 299
    assert not collector.collect().gpus[3].healthy
    now[0] = 301
    assert collector.collect().gpus[3].healthy
