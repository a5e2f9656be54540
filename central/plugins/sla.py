"""sla: jobs that have waited past their service-level time go first and are let through.

The waiting time comes from the PodGroup annotation `volcano.sh/sla-waiting-time` or else
the plugin argument `sla-waiting-time` (a duration: `30m`, `1h`). Jobs with an SLA come
before jobs without one, the earliest deadline (creation + waiting time) first. Once a job's
deadline has passed, its JobEnqueueable and JobPipelined votes are Permit; before, Abstain.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from central.errors import InputError
from central.framework.plugin import ABSTAIN, PERMIT, Plugin
from central.model.objects import JobInfo
from central.model.fields import parse_duration, parse_time

ANNOTATION = "volcano.sh/sla-waiting-time"


class Sla(Plugin):
    name = "sla"

    def __init__(self, option, session):
        super().__init__(option, session)
        default = self.argument("sla-waiting-time", "", str)
        self.default = parse_duration(default, "plugin sla: arguments.sla-waiting-time") if default else None
        self.deadlines: dict[str, datetime | None] = {}
        for job in session.jobs.values():
            try:
                self.deadlines[job.uid] = self._deadline(job)
            except InputError as err:  # one bad annotation must not stop the cycle
                session.job_notes[job.uid] = f"{err}; the job has no SLA"
                self.deadlines[job.uid] = None

    def _deadline(self, job: JobInfo) -> datetime | None:
        wait: timedelta | None = self.default
        if ANNOTATION in job.annotations:
            wait = parse_duration(job.annotations[ANNOTATION], f"PodGroup {job.uid}: metadata.annotations[{ANNOTATION}]")
        if wait is None:
            return None
        if not job.creation:
            return self.session.now + wait  # not created yet as far as we know: the wait starts now
        try:
            return parse_time(job.creation, "metadata.creationTimestamp") + wait
        except InputError as err:
            raise err.within(f"PodGroup {job.uid}") from None

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        ld, rd = self.deadlines.get(left.uid), self.deadlines.get(right.uid)
        if ld is None or rd is None:
            return 0 if ld is rd else (1 if ld is None else -1)
        return -1 if ld < rd else (1 if ld > rd else 0)

    def job_enqueueable(self, job: JobInfo) -> int:
        deadline = self.deadlines.get(job.uid)
        return PERMIT if deadline is not None and self.session.now >= deadline else ABSTAIN

    job_pipelined = job_enqueueable
