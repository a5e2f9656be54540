"""When a report section has changed enough to be worth sending: a deadband against what was sent.

CPU rounded to millicores changes every sample, so comparing bytes made every sample a report.
Instead each measured figure is compared with the value last sent: a move smaller than the
deadband (`deadband_percent` of the node's capacity: cores for CPU figures, bytes for memory
figures; absolute points for ratios such as PSI and GPU utilisation) does not count. Anything
else (a pod added, a taint, topology, capacities) counts on any change. The comparison is
against the last value *sent*, not the previous sample, so a slow drift is reported once it
adds up. The stream's heartbeat still carries the latest resources section, whatever moved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Hashable, TypeVar

from google.protobuf.message import Message

from nodeagent.api.v1 import agent_pb2 as pb

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
_STAT_FIELDS = ("last", "avg", "p95")
_PRESSURE_FIELDS = ("cpu_pressure", "memory_pressure", "io_pressure")


class Bands:
    def __init__(self, percent: float, resources: pb.Resources | None) -> None:
        share = percent / 100
        self.cores = share * (resources.cpu_capacity_cores if resources else 0.0)
        self.bytes = share * (resources.memory_capacity_bytes if resources else 0)
        self.ratio = share  # for figures that are already ratios (0-1)


def _keep(out: Message, sent: Message, fields: tuple[str, ...], band: float) -> None:
    """Copies each field from `sent` into `out` where they differ by less than `band`."""
    for name in fields:
        if _optional(out, name) and not (out.HasField(name) and sent.HasField(name)):
            continue  # known on one side only: that is a change
        if abs(getattr(out, name) - getattr(sent, name)) < band:
            setattr(out, name, getattr(sent, name))


def _optional(message: Message, name: str) -> bool:
    present: bool = message.DESCRIPTOR.fields_by_name[name].has_presence
    return present


def _keep_stat(out: Message, sent: Message, name: str, band: float) -> None:
    if out.HasField(name) and sent.HasField(name):
        _keep(getattr(out, name), getattr(sent, name), _STAT_FIELDS, band)


def _keep_pressure(out: Message, sent: Message, band: float) -> None:
    for name in _PRESSURE_FIELDS:
        if out.HasField(name) and sent.HasField(name):
            _keep(getattr(out, name), getattr(sent, name), ("some_avg10", "some_avg60", "full_avg10", "full_avg60"),
                  band)


def _by(items: Iterable[T], key: Callable[[T], K]) -> dict[K, T]:
    return {key(i): i for i in items}


def _resources(out: pb.Resources, sent: pb.Resources, b: Bands) -> None:
    _keep_stat(out, sent, "cpu_usage_cores", b.cores)
    _keep_stat(out, sent, "memory_usage_bytes", b.bytes)
    _keep(out, sent, ("batch_cpu_millicores",), b.cores * 1000)
    _keep(out, sent, ("batch_memory_bytes",), b.bytes)
    old = _by(sent.numa, lambda n: n.id)
    for numa in out.numa:
        if numa.id in old:
            _keep(numa, old[numa.id], ("cpu_usage_cores",), b.cores)
    _keep_pressure(out, sent, b.ratio)


def _pods(out: pb.Pods, sent: pb.Pods, b: Bands) -> None:
    old = _by(sent.pods, lambda p: p.uid)
    for pod in out.pods:
        if pod.uid in old:
            _keep_stat(pod, old[pod.uid], "cpu_usage_cores", b.cores)
            _keep_stat(pod, old[pod.uid], "memory_working_set_bytes", b.bytes)
            _keep_pressure(pod, old[pod.uid], b.ratio)


def _topology(out: pb.Topology, sent: pb.Topology, b: Bands) -> None:
    old = _by(sent.numa_nodes, lambda n: n.id)
    for numa in out.numa_nodes:
        if numa.id in old:
            _keep(numa, old[numa.id], ("memory_free_bytes",), b.bytes)


def _gpus(out: pb.Gpus, sent: pb.Gpus, b: Bands) -> None:
    old = _by(sent.gpus, lambda g: g.uuid)
    for gpu in out.gpus:
        if gpu.uuid not in old:
            continue
        band = b.ratio * gpu.memory_total_bytes
        _keep(gpu, old[gpu.uuid], ("memory_used_bytes",), band)
        _keep(gpu, old[gpu.uuid], ("utilization_ratio",), b.ratio)
        procs = _by(old[gpu.uuid].processes, lambda p: p.pid)
        for proc in gpu.processes:
            if proc.pid in procs:
                _keep(proc, procs[proc.pid], ("used_memory_bytes",), band)


def _qos(out: pb.QosState, sent: pb.QosState, b: Bands) -> None:
    _keep(out, sent, ("offline_cpu_quota_cores",), b.cores)
    _keep(out, sent, ("offline_memory_limit_bytes",), b.bytes)


_SETTLE = {"resources": _resources, "pods": _pods, "topology": _topology, "gpus": _gpus, "qos": _qos}


def changed(name: str, new: Message, sent: Message | None, bands: Bands) -> bool:
    """True when `new` differs from `sent` by more than the deadband."""
    if sent is None:
        return True
    settled = type(new)()
    settled.CopyFrom(new)
    _SETTLE[name](settled, sent, bands)
    ours: bytes = settled.SerializeToString(deterministic=True)
    theirs: bytes = sent.SerializeToString(deterministic=True)
    return ours != theirs
