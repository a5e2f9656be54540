"""The CronJob controller: Jobs started on a cron schedule (`central.controllers.cronjobs` decides).

A CronJob's key is queued when it changes and when a Job it controls changes; the sync asks to
be woken just after the next schedule time, so nothing polls."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from central.controllers.cronjobs import active_reference, controlled_by, reconcile_cronjob
from central.controllers.loops.base import ControllerLoop, url_for
from central.kube.client import VOLCANO_BATCH, ApiError, KubeClient, path
from central.kube.events import EventRecorder


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class CronJobController(ControllerLoop):
    name = "cronjob-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1,
                 clock: Callable[[], datetime] = _utc_now):
        super().__init__(client, events, workers)
        self.clock = clock
        self.cronjobs = self.watch(path(VOLCANO_BATCH, "cronjobs"), lambda cj: [self._key(cj)])
        self.jobs = self.watch(path(VOLCANO_BATCH, "jobs"), self._owner)

    @staticmethod
    def _key(obj: dict[str, Any]) -> str:
        return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"

    def _owner(self, job: dict[str, Any]) -> list[str]:
        namespace = job["metadata"].get("namespace")
        return [f"{namespace}/{ref['name']}" for ref in job["metadata"].get("ownerReferences") or []
                if ref.get("controller") and ref.get("kind") == "CronJob"]

    def sync(self, key: str) -> float | None:
        cronjob = self.cronjobs.objects.get(key)
        if cronjob is None:
            return None  # deleted: its Jobs go with it (owner references)
        namespace = cronjob["metadata"]["namespace"]
        jobs = [j for j in list(self.jobs.objects.values())
                if j["metadata"].get("namespace") == namespace and controlled_by(j, cronjob)]
        d = reconcile_cronjob(cronjob, jobs, self.clock())
        for name in d.delete:
            self.client_delete_job(namespace, name)
        for event_type, reason, message in d.events:
            self.events.emit(cronjob, event_type, reason, message)
        if d.create is not None:
            try:
                created = self.client.create(url_for("Job", namespace), d.create)
            except ApiError as err:
                if err.code != 409:
                    self.events.emit(cronjob, "Warning", "FailedCreate", f"Error creating job: {err}")
                    raise
                created = self.client.get(url_for("Job", namespace, d.create["metadata"]["name"]))
                if not controlled_by(created, cronjob):
                    self.events.emit(cronjob, "Warning", "ForeignJob",
                                     f"Job {created['metadata']['name']!r} exists and is not controlled by this CronJob")
                    return d.requeue_after
            else:
                self.events.emit(cronjob, "Normal", "SuccessfulCreate", f"Created job {created['metadata']['name']}")
            if not any(ref.get("uid") == created["metadata"].get("uid") for ref in d.status["active"]):
                d.status["active"].append(active_reference(created))
        if d.status_changed:
            self.write_status("CronJob", cronjob, {k: v for k, v in d.status.items() if v or k == "active"})
        return d.requeue_after

    def client_delete_job(self, namespace: str, name: str) -> None:
        # background propagation: the Job's pods and PodGroup go with it, as a kubectl delete
        try:
            self.client.request("DELETE", url_for("Job", namespace, name), body={"propagationPolicy": "Background"})
        except ApiError as err:
            if err.code != 404:
                raise
