"""lowNodeUtilization: the rescheduling plugin's strategy (Volcano's, after the descheduler's).

Utilization is a percentage of the node's allocatable cpu and memory. Nodes are grouped:
- low: schedulable, and every configured resource below its `thresholds` value;
- high (otherwise): some configured resource above its `targetThresholds` value.
Nothing is evicted when no node is low, when every node is, or when none is high. The room
the low nodes offer is, per resource, the sum over them of (target - utilization) of their
allocatable. High nodes are drained busiest first (cpu% + memory%); on each, pods go lowest
priority first (a pod without spec.priority before any with one), then BestEffort before
Burstable before Guaranteed; each victim's request is taken off its node's utilization and
off the room. A node stops giving up pods once none of its resources is at or above its
target, and all stop once the room in cpu or memory is used up.

Only the candidates offered (the shuffle action offers the session's Running tasks) are
evicted; other pods on a node keep their place in the order and are skipped.

Differences from Volcano, on purpose:
- Without a fresh agent report a node's requests stand in for its usage (as the usage
  plugin does). Volcano reads 0% there, so an unmeasured node always looks idle.
- The room is used up at zero or below; Volcano stops only at exactly zero, so one large
  victim that overshoots lets the next ones go too.
- Both grouping and victims' share use allocatable; Volcano takes victims' share of the
  node's capacity.
- `pods` thresholds (Volcano parses the key `pod`, and never measures pods) are accepted
  and, as in Volcano, unused; so are `thresholdPriority`, `thresholdPriorityClassName`,
  `numberOfNodes` and `nodeFit`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from central.errors import InputError, shown
from central.model.objects import TaskInfo

NAME = "lowNodeUtilization"
MEASURED = ("cpu", "memory")  # the resources whose utilization is known (Volcano's too)
THRESHOLD_KEYS = (*MEASURED, "pods", "pod")  # "pod" is the key Volcano's parser reads
UNUSED_PARAMS = ("thresholdPriority", "thresholdPriorityClassName", "numberOfNodes", "nodeFit")


@dataclass(frozen=True)
class LowNodeUtilization:
    thresholds: Mapping[str, float] = field(default_factory=lambda: {"cpu": 100.0, "memory": 100.0, "pods": 100.0})
    target_thresholds: Mapping[str, float] = field(default_factory=lambda: {"cpu": 100.0, "memory": 100.0, "pods": 100.0})

    @classmethod
    def parse(cls, params: Any, where: str) -> LowNodeUtilization:
        """Volcano's params map; a wrong key or value is an InputError at `where`."""
        if params is None:
            return cls()
        if not isinstance(params, Mapping):
            raise InputError(where, f"expected a map, got {shown(params)}")
        known = ("thresholds", "targetThresholds", *UNUSED_PARAMS)
        for key in params:
            if key not in known:
                raise InputError(f"{where}.{key}", f"unknown parameter; valid: {', '.join(known)}")
        default = cls()
        return cls(_thresholds(params.get("thresholds"), default.thresholds, f"{where}.thresholds"),
                   _thresholds(params.get("targetThresholds"), default.target_thresholds, f"{where}.targetThresholds"))


def _thresholds(raw: Any, default: Mapping[str, float], where: str) -> Mapping[str, float]:
    """The given percentages over the defaults (Volcano keeps a default for a key not given)."""
    if raw is None:
        return default
    if not isinstance(raw, Mapping):
        raise InputError(where, f"expected a map such as {{cpu: 80, memory: 80}}, got {shown(raw)}")
    out = dict(default)
    for key, value in raw.items():
        if key not in THRESHOLD_KEYS:
            raise InputError(f"{where}.{key}", f"unknown resource; valid: {', '.join(THRESHOLD_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            raise InputError(f"{where}.{key}", f"expected a percentage from 0 to 100, got {shown(value)}")
        out["pods" if key == "pod" else key] = float(value)
    return out


@dataclass
class NodeLoad:
    """One node's utilization in percent (cpu, memory), updated as victims are chosen."""

    name: str
    schedulable: bool
    percent: np.ndarray  # [cpu%, memory%]
    allocatable: np.ndarray  # [millicores, bytes]
    tasks: list[TaskInfo]


def choose_victims(conf: LowNodeUtilization, nodes: Sequence[NodeLoad], candidates: list[TaskInfo]) -> list[tuple[TaskInfo, str]]:
    """The victims and why, per the module's docstring."""
    low = [n for n in nodes if _low(conf, n)]
    high = [n for n in nodes if n not in low and _high(conf, n)]
    if not low or len(low) == len(nodes) or not high:
        return []
    target = np.array([conf.target_thresholds[r] for r in MEASURED])
    room = sum(((target - n.percent) / 100 * n.allocatable for n in low), np.zeros(2))
    offered = {t.uid for t in candidates}
    victims: list[tuple[TaskInfo, str]] = []
    for node in sorted(high, key=lambda n: -float(n.percent.sum())):
        why = f"rescheduling: {NAME}, node {node.name} above its target utilization ({_shown(node.percent)})"
        for task in sorted(node.tasks, key=_eviction_order):
            if not (_overused(conf, node) and (room > 0).all()):
                break
            if task.uid not in offered:
                continue
            request = task.resreq[:2] if task.resreq is not None else np.zeros(2)
            room = room - request
            node.percent = node.percent - np.divide(request * 100, node.allocatable, out=np.zeros(2),
                                                    where=node.allocatable > 0)
            victims.append((task, why))
    return victims


def _low(conf: LowNodeUtilization, node: NodeLoad) -> bool:
    return node.schedulable and all(node.percent[i] < conf.thresholds[r] for i, r in enumerate(MEASURED))


def _high(conf: LowNodeUtilization, node: NodeLoad) -> bool:
    return any(node.percent[i] > conf.target_thresholds[r] for i, r in enumerate(MEASURED))


def _overused(conf: LowNodeUtilization, node: NodeLoad) -> bool:
    """Still at or above a target (Volcano's test to go on; `_high` is strictly above)."""
    return any(node.percent[i] >= conf.target_thresholds[r] for i, r in enumerate(MEASURED))


def _eviction_order(task: TaskInfo) -> tuple[bool, int, int, str]:
    """Lowest priority first, a pod without spec.priority before all; then QoS, BestEffort first."""
    qos = 0 if task.best_effort else (2 if task.template.guaranteed else 1)
    return (task.spec_priority is not None, task.priority, qos, task.uid)


def _shown(percent: np.ndarray) -> str:
    return f"cpu {percent[0]:.0f}%, memory {percent[1]:.0f}%"
