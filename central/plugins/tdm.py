"""tdm (time division multiplexing): revocable nodes lent to preemptable work in time windows.

Nodes labelled `volcano.sh/revocable-zone: <zone>` belong to a zone whose window comes from
the argument `tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`, in the time zone of the session
clock (`ssn.now`; UTC under `caldera simulate --now ...Z`). A window whose end is not after
its start runs past midnight ("22:00-06:00"; equal ends mean all day); Volcano anchors both
ends to today and so misses the early-morning half of such a window. A zone without a window
is always closed.

Revocable tasks are those explicitly marked preemptable (`volcano.sh/preemptable: "true"`,
annotation first, then label) or annotated `volcano.sh/revocable-zone: "*"`. The explicit
mark matters: the scheduler core treats an unmarked pod as preemptable, which would lend
revocable nodes to every pod.

- predicate: revocable nodes only for revocable tasks, and only while their zone is open;
- score: 100 for a revocable task on an open revocable node (a batch score: whether a task
  is revocable is not part of its pod template);
- preemptable: revocable preemptors take nothing; others may take Running, explicitly
  preemptable tasks on ordinary nodes, at most each job's disruption budget;
- victim_tasks (shuffle): once the zone's window has closed, its revocable Running tasks,
  again within each job's budget, at most once per `tdm.evict.period` (default 1m);
- job order: non-preemptable jobs first; starving: a non-preemptable job with pending tasks.

The budget comes from the PodGroup annotations `volcano.sh/jdb-max-unavailable` (evict
while fewer than that many tasks are down) or `volcano.sh/jdb-min-available` (keep that many
Running), each an integer or a percentage of the job's tasks (rounded up); without either,
one task per job. Unlike Volcano, a job already below its min-available gives up nothing,
and a budget that does not read faults its job (see `central.framework.faults`), which then
gives up nothing either.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check
from central.model.annotations import count_or_percent
from central.model.fields import parse_duration
from central.model.objects import JobInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

ZONE = "volcano.sh/revocable-zone"
PREEMPTABLE = "volcano.sh/preemptable"
MIN_AVAILABLE = "volcano.sh/jdb-min-available"
MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
ZONE_ARGUMENT = "tdm.revocable-zone."
PERIOD_ARGUMENT = "tdm.evict.period"
MAX_SCORE = 100.0
_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def parse_window(text: object, where: str) -> tuple[int, int]:
    """"HH:MM-HH:MM" as (start, end) minutes of the day."""
    match = _WINDOW.match(text) if isinstance(text, str) else None
    if match is None:
        raise InputError(where, f'expected a window like "09:00-18:00", got {text!r}')
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise InputError(where, f"hours must be 00-23 and minutes 00-59, got {text!r}")
    return h1 * 60 + m1, h2 * 60 + m2


def inside(window: tuple[int, int], now: datetime) -> bool:
    start, end = window
    minute = now.hour * 60 + now.minute
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end  # past midnight; start == end: all day


def budget_value(job: JobInfo, key: str, total: int) -> int:
    """An int-or-percent budget annotation resolved against the job's task count."""
    try:
        value, percent = count_or_percent(job.annotations[key], key)
    except InputError as err:
        raise err.within(f"PodGroup {job.uid}") from None
    return math.ceil(value * total / 100) if percent else value


def evictable(job: JobInfo) -> int:
    """How many more of the job's Running tasks may be evicted now (Volcano's job budget)."""
    running, total = job.count(TaskStatus.RUNNING), len(job.tasks)
    if MAX_UNAVAILABLE in job.annotations:
        finished = job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED)
        down = total - finished - running
        return max(budget_value(job, MAX_UNAVAILABLE, total) - down, 0)
    if MIN_AVAILABLE in job.annotations:
        return max(running - budget_value(job, MIN_AVAILABLE, total), 0)
    return 1


def revocable(task: TaskInfo) -> bool:
    """May the task use revocable nodes: explicitly preemptable, or revocable-zone "*"."""
    return marked_preemptable(task) or task.annotations.get(ZONE) == "*"


def marked_preemptable(task: TaskInfo) -> bool:
    value = task.annotations.get(PREEMPTABLE)
    if value is None:
        value = task.template.label_map.get(PREEMPTABLE)
    return value is not None and value.strip().lower() == "true"


class Tdm(Plugin, ext.JobOrder, ext.JobStarving, ext.Preemptable, ext.VictimTasks, ext.Predicate, ext.BatchNodeOrder):
    name = "tdm"
    time_sensitive = True  # revocable zones open and close

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[dict[str, tuple[str, tuple[int, int]]], timedelta]:
        """The windows by zone (as written, and parsed), and the eviction period."""
        windows = {}
        for key, value in args.raw.items():
            if key.startswith(ZONE_ARGUMENT) and len(key) > len(ZONE_ARGUMENT):
                windows[key[len(ZONE_ARGUMENT):]] = (str(value), parse_window(args.get(key, None, object),
                                                                              f"plugin tdm: arguments.{key}"))
            elif key != PERIOD_ARGUMENT:
                raise args.error(key, f"unknown argument; valid: {ZONE_ARGUMENT}<zone>, {PERIOD_ARGUMENT}")
        period = args.get(PERIOD_ARGUMENT, "1m", str)
        return windows, parse_duration(period, f"plugin tdm: arguments.{PERIOD_ARGUMENT}")

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.windows: dict[str, tuple[str, tuple[int, int]]]  # zone -> (text, window)
        self.period: timedelta
        self.windows, self.period = self.settings
        now = handle.now
        self.open_zones = {zone for zone, (_, window) in self.windows.items() if inside(window, now)}
        zones = [node.labels.get(ZONE) for node in handle.nodes]
        self.zone_of_row = zones
        self.revocable_rows = np.array([z is not None for z in zones], dtype=bool)
        self.open_rows = np.array([z in self.open_zones for z in zones], dtype=bool)
        self.any_revocable = bool(self.revocable_rows.any())
        for job in handle.jobs.values():  # a malformed budget faults its job now, not mid-cycle
            try:
                for key in (MAX_UNAVAILABLE, MIN_AVAILABLE):
                    if key in job.annotations:
                        budget_value(job, key, len(job.tasks))
            except InputError as err:
                handle.fault_job(job, err, self.name)

    # --- placement ------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        if not self.any_revocable:
            return []
        if revocable(task):
            return [Check(~self.revocable_rows[rows] | self.open_rows[rows],
                          "node(s) were in a revocable zone outside its time window")]
        return [Check(~self.revocable_rows[rows], "node(s) were in a revocable zone, only for preemptable tasks")]

    def batchable(self, task: TaskInfo) -> bool:
        return not (self.open_zones and revocable(task))  # the zone filter is fixed for the session

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        if not self.open_zones or not revocable(task):
            return None
        return np.where(self.open_rows[rows], MAX_SCORE, 0.0)

    # --- eviction -------------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        if revocable(preemptor):
            return []
        nodes = self.handle.nodes_by_name
        ordinary = [t for t in candidates if t.status == TaskStatus.RUNNING and marked_preemptable(t)
                    and t.node in nodes and not self.revocable_rows[nodes[t.node].index]]
        return self._within_budgets(ordinary)

    def victim_tasks(self, running: list[TaskInfo]) -> list[tuple[TaskInfo, str]]:
        now = self.handle.now
        last: datetime | None = self.handle.recall(self.name, "last_evict")  # the period outlives a session
        if last is not None and now < last + self.period:
            return []
        closed = {zone for zone in self.windows if zone not in self.open_zones}
        nodes = self.handle.nodes_by_name
        leaving = [t for t in running if t.status == TaskStatus.RUNNING and t.node in nodes and revocable(t)
                   and self.zone_of_row[nodes[t.node].index] in closed]
        victims = self._within_budgets(leaving)
        if victims:
            self.handle.remember(self.name, "last_evict", now)
        reasons = []
        for task in victims:
            zone = self.zone_of_row[nodes[task.node].index]
            reasons.append((task, f"tdm: revocable zone {zone} is outside its window {self.windows[zone][0]}"))
        return reasons

    def _within_budgets(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """The tasks, in order, as far as each job's disruption budget allows (a faulted job,
        whose budget may not be readable, gives up nothing)."""
        left: dict[str, int] = {}
        chosen = []
        for task in tasks:
            job = self.handle.jobs.get(task.job_uid)
            if job is None or self.handle.is_faulted(job):
                continue
            if job.uid not in left:
                left[job.uid] = evictable(job)
            if left[job.uid] > 0:
                left[job.uid] -= 1
                chosen.append(task)
        return chosen

    # --- jobs -----------------------------------------------------------------------------

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        if left.preemptable == right.preemptable:
            return 0
        return 1 if left.preemptable else -1

    def job_starving(self, job: JobInfo) -> bool:
        return not job.preemptable and job.count(TaskStatus.PENDING) > 0
