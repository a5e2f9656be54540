"""overcommit: admit jobs (enqueue) while the cluster, inflated by a factor, has room.

idle = total x overcommit-factor - used (the numbers a refusal quotes); a job is admitted when the minResources of every
admitted-but-not-running job plus its own fit that idle on the dimensions it asks for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.plugin import PERMIT, REJECT, Arguments, Plugin
from central.model.nodetable import column_sums
from central.model.objects import JobInfo
from central.model.queuesums import less_gated
from central.plugins.proportion import admitted_hold, job_min_resources, never_fits
from central.resources.vectors import EPSILON, format_value, less_equal_on

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

DEFAULT_FACTOR = 1.2


class Overcommit(Plugin, ext.JobEnqueueable, ext.JobEnqueued):
    name = "overcommit"

    @classmethod
    def read_arguments(cls, args: Arguments) -> float:
        factor = args.get("overcommit-factor", DEFAULT_FACTOR)
        return factor if factor >= 1.0 else DEFAULT_FACTOR  # as Volcano: below 1 falls back to the default

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        factor = self.settings
        used = column_sums(handle.table.used[: len(handle.nodes)])
        self.idle = handle.total * factor - used
        self.inqueue = handle.dims.zeros()
        kept = handle.queue_sums()
        if kept is not None:  # the cache's per-queue sums (central.model.queuesums): what admitted jobs hold
            for sums in kept.values():
                self.inqueue += sums.held
            return
        # admitted jobs hold their minResources; running ones what it holds beyond their allocation
        holding = [job for job in handle.jobs.values() if job.min_resources is not None and (
            job.phase == "Inqueue" or job.phase == "Running" and job.ready_num >= job.min_available)]
        if holding:  # in one array: a session has many jobs, and most have not changed
            held = np.array([job_min_resources(handle, job) for job in holding])
            running = np.array([job.phase == "Running" for job in holding])
            allocated = np.array([job.allocated for job in holding])
            held[running] = np.maximum(held[running] - allocated[running], 0)
            self.inqueue = admitted_hold(holding, held)

    def job_enqueueable(self, job: JobInfo) -> int:
        if job.min_resources is None:
            return PERMIT
        min_res = job_min_resources(self.handle, job)
        if less_equal_on(self.inqueue + min_res, self.idle, min_res):
            return PERMIT
        names = self.handle.dims.names
        never = never_fits(names, min_res, None, self.handle.total * self.settings,
                           f"the cluster has with overcommit-factor {self.settings:g}")
        if never is not None:
            self.handle.note_job(job, f"resource in cluster is overused: {never}")
            return REJECT
        short = [i for i in range(len(names))
                 if min_res[i] > EPSILON and self.inqueue[i] + min_res[i] > self.idle[i] + EPSILON]
        detail = "; ".join(f"{names[i]}: the job needs {format_value(names[i], min_res[i])}, "
                           f"{format_value(names[i], self.inqueue[i])} of {format_value(names[i], max(self.idle[i], 0.0))}"
                           f" idle are admitted already" for i in short)
        self.handle.note_job(job, f"resource in cluster is overused ({detail})")
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        if job.min_resources is not None:
            self.inqueue += less_gated(job, job_min_resources(self.handle, job))
