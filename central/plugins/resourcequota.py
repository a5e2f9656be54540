"""resourcequota: a job is admitted (enqueue) only while its namespace's ResourceQuotas hold it.

For each ResourceQuota of the job's namespace, the PodGroup's `spec.minResources`, narrowed
to the names the quota limits (`status.hard`: `cpu`, `requests.cpu`, `pods`, `count/pods`...;
a Volcano Job's PodGroup carries all of them), is added to the quota's `status.used` and to
what the jobs admitted earlier in the session take from the namespace; any name then above
its hard limit refuses the job, with a note naming those names, as Volcano's event does.
Jobs without minResources, and namespaces without ResourceQuotas, pass. Only a job every
plugin admitted counts against the namespace for the rest of the session.

`used` is the quota controller's figure: pods admitted in earlier sessions count once their
pods exist. Quota scopes are not read (as in Volcano).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING

from central.framework import extension as ext
from central.framework.plugin import PERMIT, REJECT, Plugin
from central.model.objects import JobInfo
from central.model.quota import BYTES, format_quantity

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption


_SUFFIXES = (("Gi", Decimal(2**30)), ("G", Decimal(10**9)), ("Mi", Decimal(2**20)), ("M", Decimal(10**6)),
             ("Ki", Decimal(2**10)), ("k", Decimal(10**3)))


def _quantity(name: str, value: Decimal) -> str:
    """Bytes in the largest unit that divides them (2G stays 2G), the rest as cpu is written."""
    base = name.split(".", 1)[1] if name.startswith(("requests.", "limits.")) else name
    if base in BYTES or base.startswith("hugepages-"):
        for suffix, size in _SUFFIXES:
            if value >= size and value % size == 0:
                return f"{value // size}{suffix}"
        return str(value)
    return format_quantity(name, value)


def _shown(amounts: Mapping[str, Decimal], names: list[str]) -> str:
    return ", ".join(f"{name}={_quantity(name, amounts.get(name, Decimal(0)))}" for name in names)


class ResourceQuota(Plugin, ext.JobEnqueueable, ext.JobEnqueued):
    name = "resourcequota"

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.pending: dict[str, dict[str, Decimal]] = {}  # namespace -> minResources admitted this session

    def job_enqueueable(self, job: JobInfo) -> int:
        request = job.quota_request
        quotas = self.handle.quotas.get(job.namespace)
        if request is None or not quotas:
            return PERMIT
        pending = self.pending.get(job.namespace, {})
        for quota in quotas.values():
            asked = {name: value for name, value in request.items() if name in quota.hard}
            exceeded = sorted(name for name, value in asked.items()
                              if quota.used.get(name, Decimal(0)) + pending.get(name, Decimal(0)) + value > quota.hard[name])
            if exceeded:
                self.handle.note_job(job, f"resource quota insufficient (ResourceQuota {quota.name}), requested: "
                                          f"{_shown(asked, exceeded)}, used: {_shown(quota.used, exceeded)}, "
                                          f"limited: {_shown(quota.hard, exceeded)}")
                return REJECT
        return PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        if job.quota_request is None or not self.handle.quotas.get(job.namespace):
            return
        pending = self.pending.setdefault(job.namespace, {})
        for name, value in job.quota_request.items():
            pending[name] = pending.get(name, Decimal(0)) + value
