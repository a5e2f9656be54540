"""The kubelet's CPU and topology manager policies and the CPUs it pinned exclusively.

Read from the kubelet's root (/var/lib/kubelet): `cpu_manager_state` (a JSON checkpoint with
policyName and, under the static policy, each container's exclusive cpuset) and `config.yaml`
(the KubeletConfiguration: cpuManagerPolicy, topologyManagerPolicy, "none" when unset). The
scheduler's NUMA-aware placement needs both; the agent never writes cpusets the kubelet owns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from nodeagent.collect.paths import parse_cpu_list, read_text
from nodeagent.health import Health

NAME = "kubelet"


@dataclass(frozen=True)
class KubeletState:
    cpu_manager_policy: str = ""
    topology_manager_policy: str = ""
    exclusive_cpus: frozenset[int] = field(default_factory=frozenset)


def read_kubelet_state(root: Path, health: Health) -> KubeletState:
    cpu_policy = topology_policy = ""
    config_file = root / "config.yaml"
    if config_file.exists():
        text = read_text(config_file, health, NAME)
        try:
            config = yaml.safe_load(text or "") or {}
            if not isinstance(config, dict):
                raise ValueError("not a mapping")
            cpu_policy = str(config.get("cpuManagerPolicy") or "none")
            topology_policy = str(config.get("topologyManagerPolicy") or "none")
        except (yaml.YAMLError, ValueError) as exc:
            health.error(NAME, "garbled_file", f"{config_file}: {exc}")
    exclusive: set[int] = set()
    state_file = root / "cpu_manager_state"
    if state_file.exists():
        text = read_text(state_file, health, NAME)
        try:
            state = json.loads(text or "{}")
            cpu_policy = str(state.get("policyName") or cpu_policy)
            for containers in (state.get("entries") or {}).values():
                for cpuset in containers.values():
                    exclusive.update(parse_cpu_list(cpuset))
        except (ValueError, AttributeError, TypeError) as exc:
            health.error(NAME, "garbled_file", f"{state_file}: {exc}")
    return KubeletState(cpu_policy, topology_policy, frozenset(exclusive))
