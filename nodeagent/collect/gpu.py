"""GPUs through NVML (`import pynvml`, shipped by nvidia-ml-py), with a null collector.

No driver, no library or a failing nvmlInit: `open_gpu_collector` returns the null collector
(status "none") and the rest of the agent keeps working. A device that fails mid-read is
reported unhealthy with the error instead of being dropped or taking the others down.
On a MIG-enabled GPU NVML cannot measure utilisation, so it is reported unknown (None), not 0;
MIG instances are listed with their memory. Each GPU's NUMA node comes from its PCI device in
sysfs; each process is mapped to its pod through /proc/<pid>/cgroup.
Health: critical Xid events are drained (without blocking) every sample; a GPU with a
hardware Xid is unhealthy until `xid_recovery_s` passes without another one (koordlet never
recovers). Xids caused by applications (13, 31, 43, 45, 68, 109) are ignored.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from nodeagent.health import Health
from nodeagent.host.paths import HostPaths, read_int

NAME = "gpu"
IGNORED_XIDS = frozenset({13, 31, 43, 45, 68, 109})
MAX_EVENTS_PER_SAMPLE = 64
_POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")


@dataclass
class GpuProcess:
    pid: int
    used_memory_bytes: int
    pod_uid: str = ""


@dataclass
class MigDevice:
    index: int
    uuid: str
    memory_total_bytes: int
    memory_used_bytes: int


@dataclass
class Gpu:
    index: int
    uuid: str = ""
    model: str = ""
    memory_total_bytes: int = 0
    memory_used_bytes: int = 0
    utilization_ratio: float | None = None
    mig_enabled: bool = False
    numa_node: int = -1
    processes: list[GpuProcess] = field(default_factory=list)
    mig_devices: list[MigDevice] = field(default_factory=list)
    healthy: bool = True
    error: str = ""


@dataclass
class GpuReport:
    status: str  # ok | none | error
    gpus: list[Gpu] = field(default_factory=list)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def pod_uid_of_pid(paths: HostPaths, pid: int) -> str:
    try:
        match = _POD_UID.search((paths.proc_root / str(pid) / "cgroup").read_text())
    except OSError:
        return ""
    return match.group(1).replace("_", "-") if match else ""


class NullGpuCollector:
    status = "none"

    def collect(self) -> GpuReport:
        return GpuReport(self.status)


class NvmlGpuCollector:
    def __init__(self, nvml: Any, paths: HostPaths, health: Health, xid_recovery_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._nvml, self._paths, self._health = nvml, paths, health
        self._xid_recovery_s, self._clock = xid_recovery_s, clock
        self.xid_errors: Counter[tuple[str, int]] = Counter()  # (uuid, xid)
        self._last_xid: dict[str, tuple[float, int]] = {}
        self._events = self._register_xid_events()

    def _register_xid_events(self) -> Any:
        nvml = self._nvml
        try:
            events = nvml.nvmlEventSetCreate()
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:
            self._health.error(NAME, "xid_events_unsupported", exc)
            return None
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, events)
            except nvml.NVMLError as exc:  # a GPU too old for events, or one already failing
                self._health.error(NAME, "xid_events_unsupported", f"gpu {index}: {exc}")
        return events

    def _drain_xid_events(self) -> None:
        nvml = self._nvml
        for _ in range(MAX_EVENTS_PER_SAMPLE):
            try:
                event = nvml.nvmlEventSetWait_v2(self._events, 0)
                xid = int(event.eventData)
                if xid in IGNORED_XIDS:
                    continue
                uuid = _text(nvml.nvmlDeviceGetUUID(event.device))
            except nvml.NVMLError_Timeout:
                return
            except nvml.NVMLError as exc:
                self._health.error(NAME, "xid_events_failed", exc)
                return
            self.xid_errors[(uuid, xid)] += 1
            self._last_xid[uuid] = (self._clock(), xid)

    def collect(self) -> GpuReport:
        nvml = self._nvml
        if self._events is not None:
            self._drain_xid_events()
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:
            self._health.error(NAME, "nvml_error", exc)
            return GpuReport("error")
        gpus = [self._device(i) for i in range(count)]
        self._health.ok(NAME)
        return GpuReport("ok", gpus)

    def _device(self, index: int) -> Gpu:
        nvml, gpu = self._nvml, Gpu(index)
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            gpu.uuid = _text(nvml.nvmlDeviceGetUUID(handle))
            gpu.model = _text(nvml.nvmlDeviceGetName(handle))
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            gpu.memory_total_bytes, gpu.memory_used_bytes = int(memory.total), int(memory.used)
            gpu.mig_enabled = self._mig_enabled(handle)
            if gpu.mig_enabled:
                gpu.mig_devices = self._mig_devices(handle)
            else:
                gpu.utilization_ratio = nvml.nvmlDeviceGetUtilizationRates(handle).gpu / 100.0
            gpu.processes = [
                GpuProcess(int(p.pid), int(p.usedGpuMemory or 0), pod_uid_of_pid(self._paths, int(p.pid)))
                for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            ]
            gpu.numa_node = self._numa_node(_text(nvml.nvmlDeviceGetPciInfo(handle).busId))
            last_xid = self._last_xid.get(gpu.uuid)
            if last_xid is not None and self._clock() - last_xid[0] < self._xid_recovery_s:
                gpu.healthy, gpu.error = False, f"Xid {last_xid[1]}"
        except nvml.NVMLError as exc:
            self._health.error(NAME, "device_error", f"gpu {index}: {exc}")
            gpu.healthy, gpu.error = False, str(exc)
        return gpu

    def _mig_enabled(self, handle: Any) -> bool:
        try:
            current, _pending = self._nvml.nvmlDeviceGetMigMode(handle)
        except self._nvml.NVMLError:  # not supported on pre-Ampere GPUs
            return False
        return bool(current)

    def _mig_devices(self, handle: Any) -> list[MigDevice]:
        nvml, devices = self._nvml, []
        for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except nvml.NVMLError:  # empty slot
                continue
            memory = nvml.nvmlDeviceGetMemoryInfo(mig)
            devices.append(MigDevice(slot, _text(nvml.nvmlDeviceGetUUID(mig)), int(memory.total), int(memory.used)))
        return devices

    def _numa_node(self, bus_id: str) -> int:
        # NVML writes an 8-digit PCI domain; sysfs uses 4 digits, lower case.
        domain, _, rest = bus_id.lower().partition(":")
        device = self._paths.sys_root / "bus/pci/devices" / f"{domain[-4:]}:{rest}" / "numa_node"
        node = read_int(device, self._health, NAME) if device.exists() else None
        return -1 if node is None or node < 0 else node


def open_gpu_collector(paths: HostPaths, health: Health, nvml: Any = None,
                       xid_recovery_s: float = 300.0) -> NvmlGpuCollector | NullGpuCollector:
    try:
        if nvml is None:
            import pynvml

            nvml = pynvml
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, or no module at all
        health.error(NAME, "nvml_unavailable", exc)
        return NullGpuCollector()
    return NvmlGpuCollector(nvml, paths, health, xid_recovery_s)
