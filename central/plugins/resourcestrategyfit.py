"""resource-strategy-fit: a scoring strategy per resource, scarce-resource avoidance, and CPU
and memory kept in proportion to GPUs. Volcano's plugin of that name, with its arguments:

    - name: resource-strategy-fit
      arguments:
        resourceStrategyFitWeight: 10          # default 10; negative means 10
        resources:                             # default cpu and memory, LeastAllocated, weight 1
          nvidia.com/gpu: {type: MostAllocated, weight: 2}
          cloudml.gpu/*: {type: LeastAllocated, weight: 1}   # one trailing * matches a prefix
        sra: {enable: true, resources: nvidia.com/gpu, weight: 10, resourceWeight: {nvidia.com/gpu: 1}}
        proportional: {enable: true, resources: nvidia.com/gpu,
                       resourceProportion: {nvidia.com/gpu.cpu: 4, nvidia.com/gpu.memory: 8}}

- score: for each resource the pod requests that has a strategy (an exact name wins over the
  longest matching prefix), MostAllocated scores w x (used + request) / allocatable and
  LeastAllocated w x (allocatable - used - request) / allocatable; a node lacking the resource
  scores 0 for it, and a node where a request does not fit scores 0 in all. Score = sum /
  sum of weights x 100 x resourceStrategyFitWeight. The pod annotations
  `volcano.sh/resource-strategy-scoring-type` (one type) and `volcano.sh/resource-strategy-weight`
  (JSON, resource -> weight) replace the configured strategies for that pod; a type without
  readable weights scores 0.
- sra: a node lacking a resource the pod requests scores 0; else 100 x sra.weight x (1 - the
  summed resourceWeight of the listed scarce resources the node has / their total), so pods
  that need no GPU keep off GPU nodes.
- proportional: a pod asking for none of the listed resources fits a node only if the node's
  idle CPU and memory after it still cover, per idle unit of each listed resource present on
  the node, `<name>.cpu` cores and `<name>.memory` GB (1 and 1 by default).

As in Volcano, a weight of 0 or less becomes 1, an unknown type LeastAllocated, and a `*`
anywhere but once at the end makes the entry ignored (each with a warning in the log).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check
from central.model.objects import TaskInfo
from central.resources.vectors import EPSILON

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

log = logging.getLogger(__name__)

MAX_SCORE = 100.0
MOST, LEAST = "MostAllocated", "LeastAllocated"
TYPE_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"
DEFAULT_WEIGHT = 10
MIN_REQUEST = 0.1  # Volcano's minResource: smaller requests are not requests
NOT_COUNTED = ("pods",)  # Volcano counts pods apart from resources


@dataclass(frozen=True)
class Strategy:
    type: str
    weight: int


@dataclass(frozen=True)
class Settings:
    weight: int
    strategies: dict[str, Strategy]
    sra_weight: int
    sra: dict[str, int]  # scarce resource -> weight
    proportional: dict[str, tuple[float, float]]  # resource -> (cores, GB) kept per idle unit


def valid_pattern(name: str) -> bool:
    """No `*`, or exactly one at the end of a longer name."""
    return "*" not in name or (name != "*" and name.endswith("*") and name.count("*") == 1)


def strategy_for(name: str, strategies: dict[str, Strategy]) -> Strategy | None:
    """The exact entry, else the wildcard entry with the longest matching prefix."""
    if name in strategies:
        return strategies[name]
    best, found = "", None
    for key, strategy in strategies.items():
        prefix = key[:-1]
        if key.endswith("*") and name.startswith(prefix) and len(prefix) > len(best):
            best, found = prefix, strategy
    return found


def _names(value: Any, args: Arguments, key: str) -> list[str]:
    if not isinstance(value, str):
        raise args.error(key, f"expected a comma-separated list of resource names, got {value!r}")
    return [name.strip() for name in value.split(",") if name.strip()]


def _section(args: Arguments, key: str) -> dict[str, Any]:
    section = args.get(key, {}, dict)
    unknown = set(section) - {"enable", "resources", "weight", "resourceWeight", "resourceProportion"}
    if unknown:
        raise args.error(f"{key}.{sorted(unknown)[0]}", "unknown field")
    return section


def _number(args: Arguments, key: str, value: Any, kind: type) -> Any:
    return Arguments(args.plugin, {key: value}).get(key, 0, kind)


def read_strategies(args: Arguments) -> dict[str, Strategy]:
    raw = args.get("resources", {}, dict)
    if not raw:
        return {"cpu": Strategy(LEAST, 1), "memory": Strategy(LEAST, 1)}
    out = {}
    for name, entry in raw.items():
        where = f"resources.{name}"
        if not isinstance(entry, dict):
            raise args.error(where, f"expected {{type: MostAllocated|LeastAllocated, weight: N}}, got {entry!r}")
        if not valid_pattern(str(name)):
            log.warning("resource-strategy-fit: %s ignored: only one trailing * is supported (e.g. cloudml.gpu/*)", where)
            continue
        weight = _number(args, f"{where}.weight", entry.get("weight", 0), int)
        kind = entry.get("type", LEAST)
        if kind not in (MOST, LEAST):
            log.warning("resource-strategy-fit: %s.type %r is not %s or %s: %s", where, kind, MOST, LEAST, LEAST)
            kind = LEAST
        out[str(name)] = Strategy(kind, weight if weight > 0 else 1)
    return out


class ResourceStrategyFit(Plugin, ext.Predicate, ext.NodeOrder, ext.BatchNodeOrder):
    name = "resource-strategy-fit"

    @classmethod
    def read_arguments(cls, args: Arguments) -> Settings:
        weight = args.get("resourceStrategyFitWeight", DEFAULT_WEIGHT, int)
        sra, sra_weight = {}, 0
        section = _section(args, "sra")
        if _number(args, "sra.enable", section.get("enable", False), bool):
            sra_weight = _number(args, "sra.weight", section.get("weight", 0), int)
            weights = section.get("resourceWeight") or {}
            for name in _names(section.get("resources", ""), args, "sra.resources"):
                given = _number(args, f"sra.resourceWeight.{name}", weights.get(name, 1), int)
                sra[name] = given if given >= 0 else 1
        proportional = {}
        section = _section(args, "proportional")
        if _number(args, "proportional.enable", section.get("enable", False), bool):
            rates = section.get("resourceProportion") or {}
            for name in _names(section.get("resources", ""), args, "proportional.resources"):
                cores, gb = (_number(args, f"proportional.resourceProportion.{name}.{part}",
                                     rates.get(f"{name}.{part}", 1.0), float) for part in ("cpu", "memory"))
                proportional[name] = (cores if cores >= 0 else 1.0, gb if gb >= 0 else 1.0)
        return Settings(weight if weight >= 0 else DEFAULT_WEIGHT, read_strategies(args), sra_weight, sra, proportional)

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.conf: Settings = self.settings
        dims = handle.dims
        self.counted = np.array([name not in NOT_COUNTED for name in dims.names], dtype=bool)
        self._sra = [(dims.index[name], w) for name, w in self.conf.sra.items() if name in dims.index]
        self._sra_total = sum(self.conf.sra.values())
        self._proportional = [(name, dims.index[name], cores, gb) for name, (cores, gb)
                              in sorted(self.conf.proportional.items()) if name in dims.index]

    # --- proportional ---------------------------------------------------------------------

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        if not self._proportional:
            return []
        req = task.resreq
        if any(req[col] > 0 for _, col, _, _ in self._proportional):
            return []
        table, cpu, memory = self.handle.table, self.handle.dims.index["cpu"], self.handle.dims.index["memory"]
        checks = []
        for name, col, cores, gb in self._proportional:
            units = table.idle[rows, col] / 1000.0  # scalars count in milli-units
            has = table.alloc[rows, col] > 0
            cpu_left = table.idle[rows, cpu] - req[cpu]
            memory_left = table.idle[rows, memory] - req[memory]
            short = has & ((cpu_left < units * cores * 1000.0) | (memory_left < units * gb * 1e9))
            if short.any():
                checks.append(Check(~short, f"proportional of resource {name} check failed"))
        return checks

    # --- scores ---------------------------------------------------------------------------

    def _requested(self, task: TaskInfo) -> np.ndarray:
        return np.flatnonzero((task.resreq >= MIN_REQUEST) & self.counted)

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """sra: the part that depends on the pod's template alone."""
        if self.conf.sra_weight <= 0:
            return np.zeros(len(rows))
        alloc = self.handle.table.alloc
        lacking = (alloc[rows[:, None], self._requested(task)] <= 0).any(axis=1)
        score = np.zeros(len(rows))
        for col, weight in self._sra:
            score += np.where(alloc[rows, col] > 0, float(weight), 0.0)
        if self._sra_total > 0:
            score = 1.0 - score / self._sra_total
        return np.where(lacking, 0.0, score * MAX_SCORE * self.conf.sra_weight)

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        """The strategies' score, read per pod: its annotations may replace them."""
        if self.conf.weight <= 0:
            return None
        strategies = self._pod_strategies(task)
        if strategies is None:
            return np.zeros(len(rows))
        dims, table, req = self.handle.dims, self.handle.table, task.resreq
        total, weights = np.zeros(len(rows)), 0
        failed = np.zeros(len(rows), dtype=bool)
        for col in self._requested(task):
            strategy = strategies(dims.names[col])
            if strategy is None:
                continue
            weights += strategy.weight
            if strategy.weight == 0:
                continue  # scores 0, and Volcano checks no fit for it
            alloc = table.alloc[rows, col]
            after = table.used[rows, col] + req[col]
            present = alloc > 0
            failed |= present & (after > alloc + EPSILON)
            share = np.divide(after, alloc, out=np.zeros(len(rows)), where=present)
            if strategy.type == MOST:
                total += np.where(present, share * strategy.weight, 0.0)
            elif strategy.type == LEAST:
                total += np.where(present, (1.0 - share) * strategy.weight, 0.0)
        if weights > 0:
            total /= weights
        return np.where(failed, 0.0, total * MAX_SCORE * self.conf.weight)

    def _pod_strategies(self, task: TaskInfo) -> Any:
        """A resource name -> Strategy lookup for the pod; None when its annotations do not read."""
        kind = task.annotations.get(TYPE_ANNOTATION, "")
        if not kind:
            return lambda name: strategy_for(name, self.conf.strategies)
        try:
            weights = json.loads(task.annotations.get(WEIGHT_ANNOTATION) or "")
            if not isinstance(weights, dict) or not all(type(v) is int for v in weights.values()):
                raise ValueError("expected a JSON map of resource name to integer weight")
        except ValueError as err:
            log.error("pod %s: annotation %s: %s", task.uid, WEIGHT_ANNOTATION, err)
            return None
        return lambda name: Strategy(kind, weights[name]) if name in weights else None
