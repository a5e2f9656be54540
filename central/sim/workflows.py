"""CronJobs, JobFlows and JobTemplates in the simulated cluster of `caldera simulate --until`.

Their controllers' own decisions (`central.controllers.cronjobs`, `central.controllers.jobflows`)
run over the world's Jobs at every settle, as on a cluster: a CronJob starts a Job at each
schedule time (the world's clock, so a week of `@hourly` runs is a week of Jobs) under its
concurrency policy and history limits; a JobFlow starts each flow's Job from its JobTemplate
once the Jobs it depends on have Completed. The Jobs they make pass admission's defaults, then
live as any submitted Job. A finished Job they own stays readable here after the world retires
it, since history limits and dependencies read it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from central.admission.jobs import mutate_job
from central.controllers.cronjobs import active_reference, reconcile_cronjob
from central.controllers.jobflows import reconcile_jobflow, template_status


class Cluster(Protocol):
    """What the workflows need of the simulated cluster (`central.sim.world.World`)."""

    epoch0: float
    jobs: dict[str, dict[str, Any]]
    on_timer: Callable[[float, str], None]

    def submit(self, obj: dict[str, Any], now: float) -> None: ...
    def delete_job(self, key: str, now: float) -> None: ...

KINDS = ("CronJob", "JobTemplate", "JobFlow")
WAKE = "workflows"  # the timer key that wakes them


class Workflows:
    def __init__(self, world: Cluster):
        self.world = world
        self.cronjobs: dict[str, dict[str, Any]] = {}
        self.jobflows: dict[str, dict[str, Any]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self.retired: dict[str, dict[str, Any]] = {}  # finished Jobs of theirs the world let go, by key
        self._woken_at: set[float] = set()

    def submit(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        meta.setdefault("namespace", "default")
        meta.setdefault("uid", f"{meta['namespace']}-{meta['name']}")
        store = {"CronJob": self.cronjobs, "JobFlow": self.jobflows, "JobTemplate": self.templates}[obj["kind"]]
        store[f"{meta['namespace']}/{meta['name']}"] = obj

    def keeps(self, job: dict[str, Any]) -> bool:
        """Whether a finished Job is one of theirs (its record outlives its retirement)."""
        return any(ref.get("kind") in ("CronJob", "JobFlow") for ref in job["metadata"].get("ownerReferences") or [])

    def sync(self, now: float) -> None:
        """One pass of the CronJob, JobFlow and JobTemplate controllers."""
        at = datetime.fromtimestamp(self.world.epoch0 + now, UTC)
        for key, cronjob in sorted(self.cronjobs.items()):
            d = reconcile_cronjob(cronjob, self._jobs(key), at)
            for name in d.delete:
                self._delete(f"{_namespace(key)}/{name}", now)
            if d.create is not None:
                job = self._start(d.create, now)
                d.status.setdefault("active", []).append(active_reference(job))
            cronjob["status"] = d.status
            if d.requeue_after is not None:
                self._wake(now + d.requeue_after)
        for key, flow in sorted(self.jobflows.items()):
            templates = {name.split("/", 1)[1]: t for name, t in self.templates.items() if _namespace(name) == _namespace(key)}
            step = reconcile_jobflow(flow, templates, self._jobs(key), at)
            for name in step.delete:
                self._delete(f"{_namespace(key)}/{name}", now)
            for made in step.create:
                self._start(made, now)
            if step.status is not None:
                flow["status"] = step.status
        for key, template in self.templates.items():
            status = template_status(template, self._jobs(key))
            if status is not None:
                template["status"] = status

    def _jobs(self, key: str) -> list[dict[str, Any]]:
        namespace = _namespace(key)
        return [job for k, job in [*self.world.jobs.items(), *self.retired.items()] if _namespace(k) == namespace]

    def _start(self, job: dict[str, Any], now: float) -> dict[str, Any]:
        job = mutate_job(job)
        meta = job["metadata"]
        meta.setdefault("uid", f"{meta['namespace']}-{meta['name']}")
        self.world.submit(job, now)
        return job

    def _delete(self, key: str, now: float) -> None:
        if self.retired.pop(key, None) is None:
            self.world.delete_job(key, now)

    def _wake(self, when: float) -> None:
        if when not in self._woken_at:  # one timer per instant, however many CronJobs ask
            self._woken_at.add(when)
            self.world.on_timer(when, WAKE)


def _namespace(key: str) -> str:
    return key.split("/", 1)[0]

