"""rescheduling: descheduling through the scheduler's own evictions (Volcano's plugin).

    - name: rescheduling
      arguments:
        interval: 5m            # how often the strategies run (default 5m)
        metricsPeriod: 5m       # accepted; the agents' own averaging window is what is read
        strategies:
        - name: lowNodeUtilization
          params:
            thresholds: {cpu: 20, memory: 20}        # below all: an under-used node
            targetThresholds: {cpu: 60, memory: 60}  # above any: an over-used node

The plugin names victims through the VictimTasks point, so the `shuffle` action evicts them,
in one statement, from the session's Running tasks. Like Volcano, it runs at most once per
`interval`, the first time one interval after the scheduler started (its first session);
unlike Volcano's process-wide clock, the last run is kept with the scheduler's cache (a
rolled back session takes it back). Without `strategies` it runs lowNodeUtilization with
thresholds and targets at 100%, which evicts nothing. The strategy is in
`central.plugins.lownodeutilization`.

Volcano ignores what it cannot read (a malformed interval becomes 5m, an unknown strategy
is skipped); here each is refused with the plugin and argument named.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from central.errors import InputError, shown
from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.model.fields import parse_duration
from central.model.objects import TaskInfo
from central.plugins.lownodeutilization import NAME as LOW_NODE_UTILIZATION
from central.plugins.lownodeutilization import LowNodeUtilization, NodeLoad, choose_victims

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

DEFAULT_INTERVAL = "5m"
STRATEGIES = (LOW_NODE_UTILIZATION,)


@dataclass(frozen=True)
class Settings:
    interval: timedelta
    strategies: tuple[LowNodeUtilization, ...]


class Rescheduling(Plugin, ext.VictimTasks):
    name = "rescheduling"
    time_sensitive = True  # the interval elapses with the clock alone

    @classmethod
    def read_arguments(cls, args: Arguments) -> Settings:
        where = f"plugin {cls.name}: arguments"
        interval = parse_duration(args.get("interval", DEFAULT_INTERVAL, str), f"{where}.interval")
        parse_duration(args.get("metricsPeriod", DEFAULT_INTERVAL, str), f"{where}.metricsPeriod")
        raw = args.get("strategies", [], list)
        strategies = tuple(_strategy(item, f"{where}.strategies[{i}]") for i, item in enumerate(raw))
        return Settings(interval, strategies or (LowNodeUtilization(),))

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.settings: Settings
        self.due = self._time_to_run(handle.now)

    def _time_to_run(self, now: datetime) -> bool:
        """Volcano's timeToRun: due once `interval` has passed since the last run (or since
        the first session); a run restarts the count."""
        last: datetime | None = self.handle.recall(self.name, "last_run")
        if last is not None and now <= last + self.settings.interval:
            return False
        self.handle.remember(self.name, "last_run", now)
        return last is not None

    def victim_tasks(self, running: list[TaskInfo]) -> list[tuple[TaskInfo, str]]:
        if not self.due:
            return []
        chosen: dict[str, tuple[TaskInfo, str]] = {}
        for strategy in self.settings.strategies:
            for task, why in choose_victims(strategy, self._loads(), running):
                chosen.setdefault(task.uid, (task, why))
        return list(chosen.values())

    def _loads(self) -> list[NodeLoad]:
        """Each node's cpu and memory use in percent of allocatable: measured by its agent, or,
        without a fresh report, its pods' requests."""
        handle = self.handle
        agents, table = handle.agents, handle.table
        n = len(handle.nodes)
        measured = np.stack([agents.cpu_usage, agents.memory_usage], axis=1)
        requested = table.used[:n, :2]
        use = np.where(agents.has_usage[:, None], measured, requested)
        alloc = table.alloc[:n, :2]
        percent = np.divide(use * 100, alloc, out=np.zeros_like(use), where=alloc > 0)
        return [NodeLoad(node.name, not node.unschedulable, percent[node.index].copy(), alloc[node.index].copy(),
                         list(node.tasks.values())) for node in handle.nodes]


def _strategy(raw: Any, where: str) -> LowNodeUtilization:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InputError(where, f"expected a map with name and params, got {shown(raw)}")
    for key in raw:
        if key not in ("name", "params"):
            raise InputError(f"{where}.{key}", "unknown key; valid: name, params")
    if raw["name"] not in STRATEGIES:
        raise InputError(f"{where}.name", f"unknown strategy {raw['name']!r}; valid: {', '.join(STRATEGIES)}")
    return LowNodeUtilization.parse(raw.get("params"), f"{where}.params")
