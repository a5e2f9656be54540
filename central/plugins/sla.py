"""sla: jobs that have waited past their service-level time go first and are let through.

The waiting time comes from the PodGroup annotation `volcano.sh/sla-waiting-time`, else its
unprefixed `sla-waiting-time` (as Volcano reads it: a Job's annotation reaches its PodGroup
so), else the plugin argument `sla-waiting-time` (a duration: `30m`, `1h`). Jobs with an SLA come
before jobs without one, the earliest deadline (creation + waiting time) first. Once a job's
deadline has passed, its JobEnqueueable and JobPipelined votes are Permit; before, Abstain.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import ABSTAIN, PERMIT, Arguments, Plugin
from central.model.annotations import SLA_WAITING_TIME, SLA_WAITING_TIME_UNPREFIXED
from central.model.fields import parse_duration, parse_time
from central.model.objects import JobInfo

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

ANNOTATIONS = (SLA_WAITING_TIME, SLA_WAITING_TIME_UNPREFIXED)  # the first present counts


class Sla(Plugin, ext.JobOrder, ext.JobPipelined, ext.JobEnqueueable):
    name = "sla"
    time_sensitive = True  # a job's waiting time passes its deadline

    @classmethod
    def read_arguments(cls, args: Arguments) -> timedelta | None:
        default = args.get("sla-waiting-time", "", str)
        return parse_duration(default, "plugin sla: arguments.sla-waiting-time") if default else None

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.default: timedelta | None = self.settings
        self.deadlines: dict[str, datetime | None] = {}
        for job in handle.jobs.values():
            try:
                self.deadlines[job.uid] = self._deadline(job)
            except InputError as err:  # the job's problem, not the cycle's
                handle.fault_job(job, err, self.name)
                self.deadlines[job.uid] = None

    def _deadline(self, job: JobInfo) -> datetime | None:
        wait: timedelta | None = self.default
        where = "plugin sla: arguments.sla-waiting-time"
        key = next((k for k in ANNOTATIONS if k in job.annotations), None)
        if key is not None:
            where = f"PodGroup {job.uid}: metadata.annotations[{key}]"
            wait = parse_duration(job.annotations[key], where)
        if wait is None:
            return None
        start = self.handle.now  # not created yet as far as we know: the wait starts now
        if job.creation:
            start = parse_time(job.creation, f"PodGroup {job.uid}: metadata.creationTimestamp")
        try:
            return start + wait
        except OverflowError:
            raise InputError(where, f"a wait of {wait.days} days from {start:%Y-%m-%d} ends after year 9999") from None

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        ld, rd = self.deadlines.get(left.uid), self.deadlines.get(right.uid)
        if ld is None or rd is None:
            return 0 if ld is rd else (1 if ld is None else -1)
        return -1 if ld < rd else (1 if ld > rd else 0)

    def job_enqueueable(self, job: JobInfo) -> int:
        deadline = self.deadlines.get(job.uid)
        return PERMIT if deadline is not None and self.handle.now >= deadline else ABSTAIN

    job_pipelined = job_enqueueable
