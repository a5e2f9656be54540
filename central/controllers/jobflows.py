"""The JobFlow and JobTemplate controllers' decisions (flow.volcano.sh/v1alpha1), as Volcano's:
pure functions of a JobFlow, the JobTemplates and the Jobs, tested without a cluster (the loop
is `loops.jobflows`).

A JobFlow's flow `x` becomes the Job `<jobflow>-x`, a copy of the JobTemplate named `x` (in the
JobFlow's namespace), owned by the JobFlow and labelled and annotated with
`volcano.sh/createdByJobFlow` and `volcano.sh/createdByJobTemplate` (`<namespace>.<name>`). A flow
with `dependsOn.targets` is created once every target's Job is Completed. Volcano's controller
reads neither `dependsOn.probe` nor `flows[].patch` (the schema keeps them); neither does this.

The phase moves as Volcano's state machine: Pending -> Running once a Job runs or completes,
-> Succeed when every flow's Job is Completed, -> Failed when any Job is Failed or Terminated;
Failed is final. With `jobRetainPolicy: delete`, a Succeed JobFlow's Jobs are deleted.
A JobTemplate's `status.jobDependsOnList` names the Jobs made from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from central.controllers.cronjobs import format_time, parse_time

API_VERSION = "flow.volcano.sh/v1alpha1"
CREATED_BY_JOB_FLOW = "volcano.sh/createdByJobFlow"
CREATED_BY_JOB_TEMPLATE = "volcano.sh/createdByJobTemplate"
JOB_PHASES = ("Pending", "Running", "Completing", "Completed", "Terminating", "Terminated", "Failed")


def object_string(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def job_name(jobflow: str, flow: str) -> str:
    return f"{jobflow}-{flow}"


def flow_jobs(jobflow: dict[str, Any], jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Jobs this JobFlow made, by its label (as Volcano selects them)."""
    mark = object_string(jobflow["metadata"].get("namespace") or "", jobflow["metadata"]["name"])
    return [j for j in jobs if (j["metadata"].get("labels") or {}).get(CREATED_BY_JOB_FLOW) == mark]


def job_from_template(jobflow: dict[str, Any], flow: str, template: dict[str, Any]) -> dict[str, Any]:
    meta = jobflow["metadata"]
    namespace = meta.get("namespace") or ""
    marks = {CREATED_BY_JOB_TEMPLATE: object_string(namespace, flow),
             CREATED_BY_JOB_FLOW: object_string(namespace, meta["name"])}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": job_name(meta["name"], flow), "namespace": namespace, "labels": dict(marks),
                         "annotations": dict(marks),
                         "ownerReferences": [{"apiVersion": API_VERSION, "kind": "JobFlow", "name": meta["name"],
                                              "uid": meta.get("uid", ""), "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": dict(template.get("spec") or {})}


def _phase(job: dict[str, Any] | None) -> str:
    return (((job or {}).get("status") or {}).get("state") or {}).get("phase") or ""


@dataclass
class JobFlowDecision:
    create: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    missing_templates: list[str] = field(default_factory=list)
    status: dict[str, Any] | None = None  # None: leave the status as it is


def _running_histories(previous: list[dict[str, Any]], job: dict[str, Any], now: str) -> list[dict[str, Any]]:
    name, phase = job["metadata"]["name"], _phase(job)
    for entry in previous:
        if entry.get("name") == name and entry.get("runningHistories") is not None:
            histories = [dict(h) for h in entry["runningHistories"]]
            if histories and histories[-1].get("state") != phase:
                histories[-1]["endTimestamp"] = now
                histories.append({"startTimestamp": now, "state": phase})
            return histories
    return [{"startTimestamp": now, "state": phase}] if phase else []


def flow_status(jobflow: dict[str, Any], jobs: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """Volcano's getAllJobStatus: the Jobs by phase, one entry and one condition per Job."""
    stamp = format_time(now)
    by_phase: dict[str, list[str]] = {p: [] for p in JOB_PHASES}
    unknown: list[str] = []
    conditions: dict[str, Any] = {}
    old = jobflow.get("status") or {}
    entries = [dict(e) for e in old.get("jobStatusList") or []]
    for job in sorted(jobs, key=lambda j: j["metadata"]["name"]):
        name, phase, status = job["metadata"]["name"], _phase(job), job.get("status") or {}
        (by_phase[phase] if phase in by_phase else unknown).append(name)
        created = job["metadata"].get("creationTimestamp")
        condition: dict[str, Any] = {"phase": phase, "createTime": created}
        if status.get("runningDuration"):
            condition["runningDuration"] = status["runningDuration"]
        if status.get("taskStatusCount"):
            condition["taskStatusCount"] = status["taskStatusCount"]
        conditions[name] = {k: v for k, v in condition.items() if v}
        entry: dict[str, Any] = {"name": name, "state": phase, "startTimestamp": created,
                                 "restartCount": status.get("retryCount", 0),
                                 "runningHistories": _running_histories(entries, job, stamp)}
        end = _end_time(created, status.get("runningDuration"))
        if end:
            entry["endTimestamp"] = end
        entry = {k: v for k, v in entry.items() if v not in (None, "")}
        for i, e in enumerate(entries):
            if e.get("name") == name:
                entries[i] = entry
                break
        else:
            entries.append(entry)
    result = {"pendingJobs": by_phase["Pending"], "runningJobs": by_phase["Running"], "failedJobs": by_phase["Failed"],
              "completedJobs": by_phase["Completed"], "terminatedJobs": by_phase["Terminated"], "unKnowJobs": unknown,
              "jobStatusList": entries, "conditions": conditions, "state": dict(old.get("state") or {})}
    return {k: v for k, v in result.items() if v or k == "state"}


def _end_time(created: str | None, duration: str | None) -> str | None:
    start = parse_time(created)
    if start is None or not duration:
        return None
    return format_time(start + timedelta(seconds=_go_duration_seconds(duration)))


def _go_duration_seconds(text: str) -> float:
    """Seconds of a Go duration string as metav1.Duration writes it (`1h2m3.5s`, `250ms`)."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    total, number, i = 0.0, "", 0
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = next((u for u in ("ms", "us", "µs", "ns") if text.startswith(u, i)), ch)
        total += float(number or 0) * units.get(unit, 0.0)
        number, i = "", i + len(unit)
    return total


def next_phase(phase: str, status: dict[str, Any], flows: int) -> str:
    """Volcano's JobFlow state machine, one step."""
    failed = bool(status.get("failedJobs")) or bool(status.get("terminatedJobs"))
    if phase in ("", "Pending"):
        if (status.get("runningJobs") or status.get("completedJobs")) and not status.get("failedJobs"):
            return "Running"
        return "Failed" if failed else "Pending"
    if phase == "Running":
        if len(status.get("completedJobs") or []) == flows:
            return "Succeed"
        return "Failed" if failed else "Running"
    return phase


def ready(flow: dict[str, Any], jobflow: str, jobs_by_name: dict[str, dict[str, Any]]) -> bool:
    """Whether every target of the flow's dependsOn has its Job Completed."""
    targets = ((flow.get("dependsOn") or {}).get("targets")) or []
    return all(_phase(jobs_by_name.get(job_name(jobflow, t))) == "Completed" for t in targets)


def reconcile_jobflow(jobflow: dict[str, Any], templates: dict[str, dict[str, Any]], jobs: list[dict[str, Any]],
                      now: datetime) -> JobFlowDecision:
    """What to do for one JobFlow, given the JobTemplates (by name) and Jobs of its namespace."""
    d = JobFlowDecision()
    meta, spec = jobflow["metadata"], jobflow.get("spec") or {}
    if meta.get("deletionTimestamp"):
        return d
    state = ((jobflow.get("status") or {}).get("state") or {}).get("phase") or ""
    mine = flow_jobs(jobflow, jobs)
    if spec.get("jobRetainPolicy") == "delete" and state == "Succeed":
        d.delete = sorted(j["metadata"]["name"] for j in mine)
        return d
    if state in ("Failed", "Terminating"):  # Volcano's failed state does nothing; terminating has no sync
        return d
    by_name = {j["metadata"]["name"]: j for j in jobs}
    flows = spec.get("flows") or []
    if state != "Succeed":
        for flow in flows:
            name = job_name(meta["name"], flow["name"])
            if name in by_name or not ready(flow, meta["name"], by_name):
                continue
            template = templates.get(flow["name"])
            if template is None:
                d.missing_templates.append(flow["name"])
                break  # Volcano's deployJob returns at the first error
            d.create.append(job_from_template(jobflow, flow["name"], template))
    if d.missing_templates:  # Volcano's syncJobFlow returns at deployJob's error: no status is written
        return d
    status = flow_status(jobflow, mine, now)
    status["state"] = {"phase": next_phase(state, status, len(flows))}
    d.status = status
    return d


def template_status(template: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The JobTemplate's new status (`jobDependsOnList`), or None when no Job was made from it
    (Volcano then writes nothing)."""
    meta = template["metadata"]
    mark = object_string(meta.get("namespace") or "", meta["name"])
    names = sorted(j["metadata"]["name"] for j in jobs
                   if (j["metadata"].get("labels") or {}).get(CREATED_BY_JOB_TEMPLATE) == mark)
    if not names:
        return None
    return dict(template.get("status") or {}, jobDependsOnList=names)
