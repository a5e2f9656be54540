"""cdp (cooldown protection): a Running pod is no victim until its cooldown time has passed.

Elastic jobs grow onto idle resources and are preempted or reclaimed back; without a
cooldown a pod can be evicted moments after it started, again and again. A pod that names
a duration in `volcano.sh/cooldown-time` (label first, then annotation; a Go duration such
as `600s` or `10m`) is kept out of preempt's and reclaim's victims while it is Running and
its PodScheduled condition turned True less than that long before the session's clock.
Pods without the key, with a value that does not read as a duration, not Running, or
without the condition, stay candidates, as in Volcano (admission refuses a bad value on the
annotation; a label is not checked there).

Unlike Volcano, the filter holds whatever later tiers decide (it is also a victim guard, as
gang is): in Volcano a tier whose answer is empty hands the choice to the next tier, so when
every candidate is cooling down, a later tier's plugin (proportion in reclaim, say) evicts
them anyway.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import Plugin
from central.model.annotations import COOLDOWN_TIME
from central.model.fields import parse_duration, parse_time
from central.model.objects import TaskInfo, TaskStatus


def cooldown_of(task: TaskInfo) -> timedelta | None:
    """The pod's cooldown time (label first, then annotation), None without a readable one."""
    value = task.template.label_map.get(COOLDOWN_TIME)
    if value is None:
        value = task.annotations.get(COOLDOWN_TIME)
    if value is None:
        return None
    try:
        return parse_duration(value, COOLDOWN_TIME)
    except InputError:
        return None


def cooling(task: TaskInfo, now: datetime) -> bool:
    """Is the Running task still inside its cooldown?"""
    cooldown = cooldown_of(task)
    if cooldown is None or task.status != TaskStatus.RUNNING or not task.scheduled_at:
        return False
    try:
        scheduled = parse_time(task.scheduled_at, "PodScheduled lastTransitionTime")
    except InputError:
        return False
    return scheduled + cooldown > now


class Cdp(Plugin, ext.Preemptable, ext.Reclaimable, ext.VictimGuard):
    name = "cdp"
    time_sensitive = True  # a cooldown ends with the clock alone

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        now = self.handle.now
        return [task for task in candidates if not cooling(task, now)]

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(reclaimer, candidates)

    def guard_victims(self, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(preemptor, victims)

    def may_lose(self, preemptor: TaskInfo, victim: TaskInfo) -> bool:
        return not cooling(victim, self.handle.now)
