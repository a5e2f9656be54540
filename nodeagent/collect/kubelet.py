"""What the kubelet decided about CPUs: its CPU- and topology-manager policies and which CPUs
are still shared (not held exclusively by a Guaranteed container).

Sources, both under the kubelet's root directory (/var/lib/kubelet, mounted read-only):
- `config.yaml`, the KubeletConfiguration: `cpuManagerPolicy` and `topologyManagerPolicy`
  (both default to "none");
- `cpu_manager_state`, the static CPU manager's checkpoint: `policyName` and
  `defaultCpuSet`, the shared pool. CPUs outside it are pinned to containers.
A missing or garbled file leaves that fact unknown (empty), counted in Health: the
scheduler then treats the node as unable to prove a NUMA fit, never as free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

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


def read_kubelet_cpu_state(kubelet_root: Path, health: Health) -> KubeletCpuState:
    config = _config(kubelet_root / "config.yaml", health)
    cpu_policy = str(config.get("cpuManagerPolicy", "none")) if config is not None else ""
    topology_policy = str(config.get("topologyManagerPolicy", "none")) if config is not None else ""
    shared = None
    state_path = kubelet_root / "cpu_manager_state"
    text = read_text(state_path, health, NAME) if state_path.exists() else None
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
