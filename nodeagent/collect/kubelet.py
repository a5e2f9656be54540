"""What the kubelet decided about CPUs: its CPU- and topology-manager policies and which CPUs
are still shared (not held exclusively by a Guaranteed container).

Sources, in order:
- the kubelet's pod-resources socket (`nodeagent.collect.podresources`): the CPU manager policy
  (static when it lists allocatable CPUs) and the CPUs held exclusively; the shared pool is the
  online CPUs less those. This is what the DaemonSet mounts: the socket's directory only.
- under the kubelet's root directory, where one is mounted (a node in host mode, `caldera up`):
  `config.yaml`, the KubeletConfiguration (`cpuManagerPolicy`, `topologyManagerPolicy`, both
  default "none"), and `cpu_manager_state`, the static CPU manager's checkpoint (`policyName`
  and `defaultCpuSet`, the shared pool).
The topology manager policy is in no socket: `node.topology_manager_policy` states it where the
kubelet's config is not mounted. A missing or garbled source leaves that fact unknown (empty),
counted in Health: the scheduler then treats the node as unable to prove a NUMA fit, never as
free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import grpc
import yaml

from nodeagent.collect.podresources import read_pod_resources
from nodeagent.health import Health
from nodeagent.host.paths import parse_cpu_list, read_text

NAME = "kubelet"


@dataclass(frozen=True)
class KubeletCpuState:
    cpu_manager_policy: str = ""  # "" when unknown
    topology_manager_policy: str = ""
    shared_cpus: frozenset[int] | None = None  # None when unknown: every CPU counts as free

    def free_cpus(self, cpus: list[int]) -> list[int]:
        """The CPUs of a NUMA node that are not pinned to a container."""
        return cpus if self.shared_cpus is None else [c for c in cpus if c in self.shared_cpus]


def read_kubelet_cpu_state(kubelet_root: Path | None, health: Health, *, socket: Path | None = None,
                           online_cpus: Iterable[int] = (), topology_manager_policy: str = "") -> KubeletCpuState:
    """`kubelet_root` None: not mounted. `topology_manager_policy` "": as the kubelet's config says."""
    config = _config(kubelet_root / "config.yaml", health) if kubelet_root is not None else None
    cpu_policy = str(config.get("cpuManagerPolicy", "none")) if config is not None else ""
    topology_policy = topology_manager_policy or (
        str(config.get("topologyManagerPolicy", "none")) if config is not None else "")
    if socket is not None and socket.exists():
        try:
            resources = read_pod_resources(socket)
        except (grpc.RpcError, OSError, ValueError) as exc:
            health.error(NAME, "pod_resources_failed", f"{socket}: {exc}")
            return KubeletCpuState("", topology_policy, None)
        policy = resources.cpu_manager_policy
        shared = frozenset(online_cpus) - resources.exclusive_cpus if policy == "static" else None
        return KubeletCpuState(policy, topology_policy, shared)
    shared = None
    state_path = kubelet_root / "cpu_manager_state" if kubelet_root is not None else None
    text = read_text(state_path, health, NAME) if state_path is not None and state_path.exists() else None
    if text is not None:
        try:
            state = json.loads(text)
            cpu_policy = str(state.get("policyName") or cpu_policy)
            if cpu_policy == "static":
                shared = frozenset(parse_cpu_list(str(state.get("defaultCpuSet", ""))))
        except (ValueError, AttributeError) as exc:
            health.error(NAME, "garbled_file", f"{state_path}: {exc}")
    return KubeletCpuState(cpu_policy, topology_policy, shared)


def _config(path: Path, health: Health) -> dict[str, Any] | None:
    if not path.exists():
        return None
    text = read_text(path, health, NAME)
    if text is None:
        return None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        health.error(NAME, "garbled_file", f"{path}: {exc}")
        return None
    if not isinstance(config, dict):
        health.error(NAME, "garbled_file", f"{path}: not a KubeletConfiguration")
        return None
    return config
