"""The JobFlow and JobTemplate controllers: a DAG of Jobs from templates, and each template's
list of the Jobs made from it (`central.controllers.jobflows` decides).

A JobFlow's key is queued when it changes, when a Job it made changes (its owner reference) and
when a JobTemplate of its namespace appears (a flow may have waited for it); a JobTemplate's
when a Job made from it changes (its label)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from central.controllers.jobflows import CREATED_BY_JOB_TEMPLATE, reconcile_jobflow, template_status
from central.controllers.loops.base import ControllerLoop, url_for
from central.kube.client import VOLCANO_BATCH, VOLCANO_FLOW, ApiError, KubeClient, path
from central.kube.events import EventRecorder

MISSING_TEMPLATE_RETRY = 5.0  # seconds; a template created later is also seen by its watch


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


class JobFlowController(ControllerLoop):
    name = "jobflow-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1,
                 clock: Callable[[], datetime] = _utc_now):
        super().__init__(client, events, workers)
        self.clock = clock
        self.jobflows = self.watch(path(VOLCANO_FLOW, "jobflows"), lambda jf: [_key(jf)])
        self.templates = self.watch(path(VOLCANO_FLOW, "jobtemplates"), self._flows_in_namespace)
        self.jobs = self.watch(path(VOLCANO_BATCH, "jobs"), self._owner)

    def _flows_in_namespace(self, template: dict[str, Any]) -> list[str]:
        namespace = template["metadata"].get("namespace")
        return [k for k, jf in list(self.jobflows.objects.items()) if jf["metadata"].get("namespace") == namespace]

    @staticmethod
    def _owner(job: dict[str, Any]) -> list[str]:
        namespace = job["metadata"].get("namespace")
        return [f"{namespace}/{ref['name']}" for ref in job["metadata"].get("ownerReferences") or []
                if ref.get("controller") and ref.get("kind") == "JobFlow"]

    def sync(self, key: str) -> float | None:
        jobflow = self.jobflows.objects.get(key)
        if jobflow is None:
            return None  # deleted: its Jobs go with it (owner references)
        namespace = jobflow["metadata"]["namespace"]
        templates = {t["metadata"]["name"]: t for t in list(self.templates.objects.values())
                     if t["metadata"].get("namespace") == namespace}
        jobs = [j for j in list(self.jobs.objects.values()) if j["metadata"].get("namespace") == namespace]
        d = reconcile_jobflow(jobflow, templates, jobs, self.clock())
        for name in d.delete:
            try:
                self.client.request("DELETE", url_for("Job", namespace, name), body={"propagationPolicy": "Background"})
            except ApiError as err:
                if err.code != 404:
                    raise
        for job in d.create:
            if self.create(job):
                self.events.emit(jobflow, "Normal", "Created", f"create a job named {job['metadata']['name']}!")
        for flow in d.missing_templates:
            self.events.emit(jobflow, "Warning", "JobTemplateNotFound",
                             f"jobtemplate {namespace}/{flow} of flow {flow!r} not found")
        if d.status is not None and d.status != (jobflow.get("status") or {}):
            self.write_status("JobFlow", jobflow, d.status)
        return MISSING_TEMPLATE_RETRY if d.missing_templates else None


class JobTemplateController(ControllerLoop):
    name = "jobtemplate-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1):
        super().__init__(client, events, workers)
        self.templates = self.watch(path(VOLCANO_FLOW, "jobtemplates"), lambda t: [_key(t)])
        self.jobs = self.watch(path(VOLCANO_BATCH, "jobs"), self._template)

    @staticmethod
    def _template(job: dict[str, Any]) -> list[str]:
        mark = (job["metadata"].get("labels") or {}).get(CREATED_BY_JOB_TEMPLATE)
        if not mark or "." not in mark:
            return []
        namespace, name = mark.split(".", 1)  # namespaces hold no dots, so the first one splits
        return [f"{namespace}/{name}"]

    def sync(self, key: str) -> float | None:
        template = self.templates.objects.get(key)
        if template is None:
            return None
        namespace = template["metadata"]["namespace"]
        jobs = [j for j in list(self.jobs.objects.values()) if j["metadata"].get("namespace") == namespace]
        status = template_status(template, jobs)
        if status is not None and status != (template.get("status") or {}):
            self.write_status("JobTemplate", template, status)
        return None
