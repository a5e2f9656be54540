"""Builders for fake host trees (sysfs, procfs, cgroups) and a fake NVML, shared by tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from nodeagent.cgroup.layout import CgroupLayout


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def fake_sys(root: Path) -> Path:
    """2 sockets = 2 NUMA nodes, 2 cores each, SMT (2 threads per core): CPUs 0-7; CPU 7 offline."""
    write(root, "devices/system/cpu/present", "0-7\n")
    write(root, "devices/system/cpu/online", "0-6\n")
    for cpu in range(8):
        socket, core = cpu // 4, (cpu % 4) // 2
        write(root, f"devices/system/cpu/cpu{cpu}/topology/physical_package_id", f"{socket}\n")
        write(root, f"devices/system/cpu/cpu{cpu}/topology/core_id", f"{core}\n")
        write(root, f"devices/system/cpu/cpu{cpu}/cache/index0/level", "1\n")
        write(root, f"devices/system/cpu/cpu{cpu}/cache/index3/level", "3\n")
        write(root, f"devices/system/cpu/cpu{cpu}/cache/index3/id", f"{socket}\n")  # one L3 per socket
    for node, cpus in ((0, "0-3"), (1, "4-7")):
        write(root, f"devices/system/node/node{node}/cpulist", cpus + "\n")
        write(root, f"devices/system/node/node{node}/distance", "10 21\n" if node == 0 else "21 10\n")
        write(root, f"devices/system/node/node{node}/meminfo",
              f"Node {node} MemTotal:       16384 kB\nNode {node} MemFree:         4096 kB\n"
              f"Node {node} FilePages:       2048 kB\nNode {node} SReclaimable:    1024 kB\n")
    return root


MEMINFO = """MemTotal:       16000000 kB
MemFree:         4000000 kB
MemAvailable:   10000000 kB
Buffers:          100000 kB
Cached:          5000000 kB
SwapCached:            0 kB
Active:          3000000 kB
Inactive:        2000000 kB
Shmem:             10000 kB
Slab:             300000 kB
SReclaimable:     200000 kB
SwapTotal:             0 kB
SwapFree:              0 kB
"""


def fake_proc(root: Path, busy_ticks: int = 0, idle_ticks: int = 0) -> Path:
    """/proc/stat with all busy time as user ticks (USER_HZ = 100) and a fixed meminfo."""
    busy = f"{busy_ticks} 0 0 {idle_ticks} 0 0 0 0 0 0"
    write(root, "stat", f"cpu  {busy}\ncpu0 {busy}\ncpu3 0 0 0 100 0 0 0 0 0 0\ncpu7 garbage\nintr 1 2 3\n")
    write(root, "meminfo", MEMINFO)
    return root


def fake_pod_cgroup(layout: CgroupLayout, rel: str, cpu_ns: int, memory: int, inactive: int) -> None:
    """The usage files of one cgroup, in the layout's version."""
    if layout.version == 1:
        write(layout.path("cpuacct", rel), "cpuacct.usage", f"{cpu_ns}\n")
        write(layout.path("memory", rel), "memory.usage_in_bytes", f"{memory}\n")
        write(layout.path("memory", rel), "memory.stat", f"cache 5\ntotal_inactive_file {inactive}\n")
        write(layout.path("cpu", rel), "cpu.cfs_quota_us", "-1\n")
        write(layout.path("cpu", rel), "cpu.cfs_period_us", "100000\n")
        write(layout.path("memory", rel), "memory.limit_in_bytes", "9223372036854771712\n")
    else:
        write(layout.path("cpu", rel), "cpu.stat", f"usage_usec {cpu_ns // 1000}\nuser_usec 1\n")
        write(layout.path("memory", rel), "memory.current", f"{memory}\n")
        write(layout.path("memory", rel), "memory.stat", f"anon 1\ninactive_file {inactive}\n")
        write(layout.path("cpu", rel), "cpu.max", "max 100000\n")
        write(layout.path("memory", rel), "memory.high", "max\n")


class NVMLError(Exception):
    pass


class NVMLError_Timeout(NVMLError):  # noqa: N801 (pynvml's name)
    pass


@dataclass
class FakeDevice:
    uuid: str
    bus_id: str
    util: int = 0
    mig: bool = False
    failing: bool = False
    processes: tuple[tuple[int, int], ...] = ()


class FakeNvml:
    """Just the pynvml calls the collector makes, backed by FakeDevice records."""

    NVMLError = NVMLError
    NVMLError_Timeout = NVMLError_Timeout
    nvmlEventTypeXidCriticalError = 8

    def __init__(self, devices: list[FakeDevice], init_error: bool = False) -> None:
        self.devices, self.init_error = devices, init_error
        self.events: list[SimpleNamespace] = []  # pending Xid events
        self.registered: list[str] = []

    def nvmlEventSetCreate(self) -> list[SimpleNamespace]:
        return self.events

    def nvmlDeviceRegisterEvents(self, dev: FakeDevice, types: int, events: object) -> None:
        self._check(dev)
        self.registered.append(dev.uuid)

    def nvmlEventSetWait_v2(self, events: list[SimpleNamespace], timeout_ms: int) -> SimpleNamespace:
        if not events:
            raise NVMLError_Timeout("Timeout")
        return events.pop(0)

    def xid(self, index: int, code: int) -> None:
        self.events.append(SimpleNamespace(device=self.devices[index], eventData=code, eventType=8))

    def nvmlInit(self) -> None:
        if self.init_error:
            raise NVMLError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeDevice:
        return self.devices[i]

    def _check(self, dev: FakeDevice) -> None:
        if dev.failing:
            raise NVMLError("GPU is lost")

    def nvmlDeviceGetUUID(self, dev: FakeDevice) -> str:
        return dev.uuid

    def nvmlDeviceGetName(self, dev: FakeDevice) -> bytes:
        return b"NVIDIA A100-SXM4-40GB"

    def nvmlDeviceGetMemoryInfo(self, dev: FakeDevice) -> SimpleNamespace:
        self._check(dev)
        return SimpleNamespace(total=40 << 30, used=(10 << 30) if not dev.uuid.startswith("MIG") else 1 << 30)

    def nvmlDeviceGetMigMode(self, dev: FakeDevice) -> list[int]:
        if not dev.mig:
            raise NVMLError("Not Supported")
        return [1, 1]

    def nvmlDeviceGetUtilizationRates(self, dev: FakeDevice) -> SimpleNamespace:
        if dev.mig:
            raise AssertionError("utilisation asked of a MIG GPU")
        return SimpleNamespace(gpu=dev.util, memory=0)

    def nvmlDeviceGetComputeRunningProcesses(self, dev: FakeDevice) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in dev.processes]

    def nvmlDeviceGetPciInfo(self, dev: FakeDevice) -> SimpleNamespace:
        return SimpleNamespace(busId=dev.bus_id.encode())

    def nvmlDeviceGetMaxMigDeviceCount(self, dev: FakeDevice) -> int:
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, dev: FakeDevice, slot: int) -> FakeDevice:
        if slot >= 2:
            raise NVMLError("Not Found")
        return FakeDevice(f"MIG-{dev.uuid}-{slot}", dev.bus_id)


OFFLINE = "kubepods/besteffort"  # the offline pods' parent cgroup


def layout_with_offline_parent(tmp_path: Path, version: int) -> CgroupLayout:
    """A cgroup tree of `version` under tmp_path holding the offline (BestEffort) parent."""
    layout = CgroupLayout(tmp_path, version, "cgroupfs")
    fake_pod_cgroup(layout, OFFLINE, cpu_ns=0, memory=0, inactive=0)
    return layout
