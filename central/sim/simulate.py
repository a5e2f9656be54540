"""Dry-run scheduling cycles over a cache, as `caldera simulate` does.

Between cycles the simulated cluster moves on: bound pods start Running on their node, and
evicted pods (and any other pod being deleted) are gone. PodGroup statuses written by a cycle are what the next one sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from central.framework.conf import SchedulerConf
from central.framework.session import CycleResult
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.model.schedulinggate import without_queue_gate
from central.scheduler.cycle import run_cycle


@dataclass
class SimulationResult:
    binds: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    eviction_reasons: dict[str, str] = field(default_factory=dict)  # pod -> why (preempted, reclaimed)
    pipelined: dict[str, str] = field(default_factory=dict)
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: dict[str, str] = field(default_factory=dict)  # "Kind key" -> why its data could not be used
    deserved: dict[str, dict[str, float]] = field(default_factory=dict)  # the latest cycle's computed shares
    deserved_by: str = ""  # the plugin that computed them
    ungated: list[str] = field(default_factory=list)  # pods whose queue-allocation gate was removed, in order
    cycles: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "binds": dict(sorted(self.binds.items())),
            "annotations": dict(sorted(self.annotations.items())),
            "evictions": sorted(self.evictions),
            "pipelined": dict(sorted(self.pipelined.items())),
            "podgroups": {k: {"phase": v["phase"], "conditions": v["conditions"]} for k, v in sorted(self.podgroups.items())},
            "pending": dict(sorted(self.pending.items())),
            "queues": dict(sorted(self.queues.items())),
            "faults": dict(sorted(self.faults.items())),
            "cycles": self.cycles,
        }


    def add(self, result: CycleResult) -> None:
        """Take in one more cycle: binds, evictions, faults and PodGroups add up; pipelined, pending,
        queues and their deserved shares are the latest cycle's."""
        self.binds.update(result.binds)
        self.annotations.update(result.annotations)
        self.evictions.extend(result.evictions)
        self.ungated.extend(result.ungated)
        self.eviction_reasons.update(result.evictions)
        self.podgroups.update(result.podgroups)
        self.pipelined, self.pending, self.queues = result.pipelined, result.pending_reasons, result.queues
        self.deserved, self.deserved_by = result.deserved, result.deserved_by
        self.faults.update((f"{fault.kind} {fault.key}", fault.reason) for fault in result.faults)


SCHEDULE_PERIOD = timedelta(seconds=1)  # Volcano's default --schedule-period


def simulate(cache: ClusterCache, conf: SchedulerConf, cycles: int = 1, start: datetime | None = None,
             progress: Callable[[], None] | None = None) -> SimulationResult:
    """Run `cycles` cycles, one schedule period apart, from `start` (default: now);
    `progress` is called after each."""
    out = SimulationResult(cycles=cycles)
    start = start or datetime.now(timezone.utc)
    for cycle in range(cycles):
        result = run_cycle(cache, conf, now=start + cycle * SCHEDULE_PERIOD)
        out.add(result)
        _advance(cache, result.binds, result.annotations, result.evictions, result.ungated)
        if progress is not None:
            progress()
    return out


def _advance(cache: ClusterCache, binds: dict[str, str], annotations: dict[str, dict[str, str]],
             evictions: dict[str, str], ungated: list[str]) -> None:
    """The cluster between two cycles: binds start running (with the annotations written
    before them); evicted and deleting pods are gone; admitted pods lose their queue gate."""
    for pod in ungated:
        task = cache.tasks.get(pod)
        if task is not None:
            task.scheduling_gates = without_queue_gate(task.scheduling_gates)
    for pod, node in binds.items():
        task = cache.tasks.get(pod)
        if task is not None:
            task.annotations.update(annotations.get(pod, {}))
            cache.set_status(task, TaskStatus.RUNNING, node)
    leaving = set(evictions) | {uid for uid, t in cache.tasks.items() if t.status == TaskStatus.RELEASING}
    for pod in leaving:
        namespace, name = pod.split("/", 1)
        cache.delete("Pod", namespace, name)
