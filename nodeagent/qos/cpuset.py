"""Pinning a pod to the CPUs the scheduler chose for it (numa-aware), where the kubelet won't.

The scheduler's numa-aware plugin writes the chosen CPUs on the pod (annotation
`caldera.sh/cpuset`). With the kubelet's static CPU manager the kubelet pins the pod itself
and this does nothing. Otherwise the agent writes `cpuset.cpus` on the pod's cgroup and its
containers' — narrowing writes children first and widening writes the pod first, since the
kernel keeps a child's CPUs within its parent's.

This is the one write the agent makes to online pods' cgroups, so it goes through its own
writer: only `cpuset.cpus`, only the value the pod's own annotation asks for, only CPUs that
are online. Each pod is written once per value.
"""

from __future__ import annotations

from pathlib import Path

from nodeagent.cgroup.driver import CgroupWriter
from nodeagent.cgroup.layout import CgroupLayout
from nodeagent.collect.kubelet import KubeletCpuState
from nodeagent.host.paths import parse_cpu_list
from nodeagent.pods import PodInfo

CPUSET_FILE = "cpuset.cpus"


class CpusetPinner:
    def __init__(self, layout: CgroupLayout, writer: CgroupWriter) -> None:
        self.layout = layout
        self.writer = writer
        self._pinned: dict[str, str] = {}  # pod uid -> cpuset written

    def run(self, pods: list[PodInfo], kubelet: KubeletCpuState, online_cpus: list[int]) -> int:
        """Pin the pods that ask for a cpuset and are not pinned yet; returns how many now."""
        if kubelet.cpu_manager_policy == "static":
            return 0
        done = 0
        for pod in pods:
            if pod.cpuset and self._pinned.get(pod.uid) != pod.cpuset and self._pin(pod, set(online_cpus)):
                self._pinned[pod.uid] = pod.cpuset
                done += 1
        live = {pod.uid for pod in pods}
        self._pinned = {uid: cpus for uid, cpus in self._pinned.items() if uid in live}
        return done

    def _pin(self, pod: PodInfo, online: set[int]) -> bool:
        pod_dir = self.layout.path("cpuset", self.layout.pod_dir(pod.uid, pod.qos_class))
        if not pod_dir.is_dir():
            return False  # not started yet: next tick
        try:
            wanted = set(parse_cpu_list(pod.cpuset, max(online, default=-1) + 1))
        except ValueError:
            wanted = set()
        valid = bool(wanted) and wanted <= online
        children = sorted(d for d in pod_dir.iterdir() if d.is_dir())
        narrowing = wanted <= _cpus(pod_dir)
        order: list[Path] = [*children, pod_dir] if narrowing else [pod_dir, *children]
        return all(self.writer.write(d, CPUSET_FILE, pod.cpuset, valid) for d in order)


def _cpus(directory: Path) -> set[int]:
    try:
        return set(parse_cpu_list((directory / CPUSET_FILE).read_text()))
    except (OSError, ValueError):
        return set()
