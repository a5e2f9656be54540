"""Per-pod CPU and memory from the pod cgroups, summarised over the sampling window.

CPU is the cgroup's usage counter delta over the elapsed time, in cores (the first sample of
a pod only primes it); memory is the working set. A figure the cgroup did not give this sample
is None (unknown), not the window's old value. Pods that disappear are dropped, so state is
bounded by the pods on the node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from nodeagent.cgroup.driver import CgroupDriver
from nodeagent.collect.window import Stat, Window
from nodeagent.host.psi import RESOURCES, Pressure
from nodeagent.pods import PodInfo

NAME = "pod_usage"


@dataclass(frozen=True)
class PodUsage:
    pod: PodInfo
    cpu_cores: Stat | None  # None: unknown
    memory_bytes: Stat | None
    pressure: dict[str, Pressure] = field(default_factory=dict)  # cpu/memory/io where the kernel has it


class _PodState:
    def __init__(self, window: int) -> None:
        self.cpu, self.mem = Window(window), Window(window)
        self.prev: tuple[float, int] | None = None
        self.cpu_fresh = self.mem_fresh = False
        self.pressure: dict[str, Pressure] = {}


class PodUsageCollector:
    def __init__(self, driver: CgroupDriver, window: int) -> None:
        self._driver, self._window = driver, window
        self._health = driver.writer.health
        self._state: dict[str, _PodState] = {}
        self._pods: dict[str, PodInfo] = {}

    def sample(self, pods: list[PodInfo], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._pods = {p.uid: p for p in pods}
        for uid in set(self._state) - set(self._pods):
            del self._state[uid]
        read = 0
        for pod in pods:
            state = self._state.setdefault(pod.uid, _PodState(self._window))
            rel = self._driver.layout.pod_dir(pod.uid, pod.qos_class)
            usage = self._driver.cpu_usage_ns(rel)
            prev, state.cpu_fresh = state.prev, False
            if usage is not None:
                if prev is not None and now > prev[0]:
                    state.cpu_fresh = True
                    state.cpu.add(max(0.0, (usage - prev[1]) / 1e9 / (now - prev[0])))
                state.prev = (now, usage)
            memory = self._driver.memory_working_set(rel)
            state.mem_fresh = memory is not None
            if memory is not None:
                state.mem.add(float(memory))
            state.pressure = {r: p for r in RESOURCES if (p := self._driver.pressure(rel, r)) is not None}
            read += usage is not None or memory is not None
        # A pod's cgroup missing is a pod starting or leaving; none readable and no kubepods
        # cgroup either is a wrong cgroup root or driver (Volcano #4912), or a broken mount.
        kubepods = self._driver.layout.path("cpu", self._driver.layout.qos_dir("Guaranteed"))
        if pods and not read and not kubepods.is_dir():
            self._health.error(NAME, "no_pod_cgroup_readable", f"{len(pods)} pods, no {kubepods}")
        else:
            self._health.ok(NAME)

    def usage(self) -> list[PodUsage]:
        return [
            PodUsage(self._pods[uid], s.cpu.stat() if s.cpu_fresh else None, s.mem.stat() if s.mem_fresh else None,
                     dict(s.pressure))
            for uid, s in sorted(self._state.items())
            if uid in self._pods
        ]
