"""Workload traces for `caldera simulate --until --trace FILE`: one JSON object per line, a job each.

    {"name": "job-17", "submit": 3600, "queue": "research", "priority": 0, "minAvailable": 4,
     "tasks": [{"name": "worker", "replicas": 4, "duration": 5400, "exitCode": 0,
                "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}]}

- name: the job's name (a DNS label), unique in the trace; namespace: optional, default "default".
- submit: seconds from the start of the simulation at which the job is submitted.
- queue: the Queue it goes to (default "default"); priority: its pods' priority (default 0).
- minAvailable: pods that must be placed together (default: all of them, a gang).
- runningEstimate: the Job's `spec.runningEstimate`, a Go duration such as `20m` (optional).
- tasks: each with name, replicas, requests (Kubernetes quantities), duration (seconds a pod
  computes; absent: until the job is deleted) and exitCode (default 0).
Blank lines and lines starting with `#` are ignored. A row becomes a Volcano Job whose pods
carry the `sim.caldera.sh/*` annotations, and goes through admission and the job controller
like any other Job. An error names the file, the row (line) and the field. Input is bounded
before it is parsed: the file as `caldera simulate`'s manifests are, a row's tasks and pods by
the admission webhook's default job limits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from central.errors import InputError
from central.manifests import read_file
from central.model import podlife
from central.model.jobspec import DEFAULT_LIMITS
from central.resources.vectors import parse_resource_list

ROW_FIELDS = frozenset({"name", "namespace", "submit", "queue", "priority", "minAvailable", "runningEstimate", "tasks"})
TASK_FIELDS = frozenset({"name", "replicas", "requests", "duration", "exitCode"})


def read_trace(path: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, Volcano Job) for each row of the trace file at `path`."""
    try:
        lines = read_file(Path(path)).decode().splitlines()
    except UnicodeDecodeError as err:
        raise InputError(path, f"cannot read: {err}") from None
    out, names = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}: row {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(where, f"not a JSON object: {err.msg} at column {err.colno}") from None
        try:
            job = job_from_row(row)
        except InputError as err:
            raise err.within(where) from None
        key = (job["metadata"]["namespace"], job["metadata"]["name"])
        if key in names:
            raise InputError(f"{where}: name", f"{key[1]!r} appears twice in the trace")
        names.add(key)
        out.append((where, job))
    return out


def job_from_row(row: Any) -> dict[str, Any]:
    """The Volcano Job a trace row describes (as a user writes it: admission's defaults come later)."""
    if not isinstance(row, Mapping):
        raise InputError("", "expected a JSON object")
    _known(row, ROW_FIELDS, "")
    name = _text(row, "name", required=True)
    submit = _number(row, "submit", 0.0)
    tasks_in = row.get("tasks")
    if not isinstance(tasks_in, list) or not tasks_in:
        raise InputError("tasks", "expected a non-empty list of tasks")
    if len(tasks_in) > DEFAULT_LIMITS.max_tasks:  # checked before any task is built
        raise InputError("tasks", f"{len(tasks_in)} tasks exceed the limit of {DEFAULT_LIMITS.max_tasks} per job")
    tasks = [_task(task, f"tasks[{i}]", int(_number(row, "priority", 0))) for i, task in enumerate(tasks_in)]
    total = sum(t["replicas"] for t in tasks)
    if total > DEFAULT_LIMITS.max_replicas:
        raise InputError("tasks", f"{total} pods exceed the limit of {DEFAULT_LIMITS.max_replicas} per job")
    min_available = int(_number(row, "minAvailable", total, integer=True))
    if not 0 < min_available <= total:
        raise InputError("minAvailable", f"must be between 1 and the job's {total} pods, got {min_available}")
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": _text(row, "namespace") or "default",
                     "annotations": {podlife.SUBMIT_AT: f"{submit:g}s"}},
        "spec": {"minAvailable": min_available, "queue": _text(row, "queue") or "default", "tasks": tasks},
    }
    if row.get("runningEstimate") is not None:
        job["spec"]["runningEstimate"] = _text(row, "runningEstimate")
    return job


def _task(task: Any, where: str, priority: int) -> dict[str, Any]:
    if not isinstance(task, Mapping):
        raise InputError(where, "expected a JSON object")
    _known(task, TASK_FIELDS, f"{where}.")
    replicas = int(_number(task, "replicas", 1, integer=True, where=where))
    if not 1 <= replicas <= DEFAULT_LIMITS.max_replicas_per_task:
        raise InputError(f"{where}.replicas",
                         f"must be between 1 and {DEFAULT_LIMITS.max_replicas_per_task}, got {replicas}")
    requests = task.get("requests") or {}
    if not isinstance(requests, Mapping):
        raise InputError(f"{where}.requests", "expected a map of resource quantities")
    parse_resource_list({k: str(v) for k, v in requests.items()}, f"{where}.requests")
    annotations = {}
    if task.get("duration") is not None:
        annotations[podlife.DURATION] = f"{_number(task, 'duration', 0.0, where=where):g}s"
    if task.get("exitCode") is not None:
        annotations[podlife.EXIT_CODE] = str(int(_number(task, "exitCode", 0, integer=True, where=where)))
    return {"name": _text(task, "name", where=where) or "main", "replicas": replicas,
            "template": {"metadata": {"annotations": annotations},
                         "spec": {"priority": priority, "containers": [{
                             "name": "main", "image": "sim",
                             "resources": {"requests": {k: str(v) for k, v in requests.items()}}}]}}}


def write_trace(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)


def _known(obj: Mapping[str, Any], fields: frozenset[str], prefix: str) -> None:
    unknown = sorted(set(obj) - fields)
    if unknown:
        raise InputError(f"{prefix}{unknown[0]}", f"unknown field; known: {', '.join(sorted(fields))}")


def _text(obj: Mapping[str, Any], field: str, required: bool = False, where: str = "") -> str:
    value = obj.get(field)
    path = f"{where}.{field}" if where else field
    if value is None:
        if required:
            raise InputError(path, "is required")
        return ""
    if not isinstance(value, str) or not value:
        raise InputError(path, f"expected a non-empty string, got {value!r}")
    return value


def _number(obj: Mapping[str, Any], field: str, default: float, integer: bool = False, where: str = "") -> float:
    value = obj.get(field, default)
    path = f"{where}.{field}" if where else field
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0 or value != value:
        kind = "a whole number" if integer else "a number"
        raise InputError(path, f"expected {kind} >= 0, got {value!r}")
    return value
