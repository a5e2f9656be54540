"""Lifecycle policies: which action a job's pods call for now, and when a timeout falls due.

Volcano's controller reacts to pod events as they happen; this is the level-triggered form:
the events are read off the pods as they are now.
- PodFailed: a pod in phase Failed (its containers' exit codes are matched by `exitCode`);
- PodEvicted: a pod Failed with reason Evicted, or any deletion of the job's pod (a preemption,
  an eviction, a plain `kubectl delete pod`) except the controller's own, which it marks with
  `volcano.sh/controller-out-of-sync` before deleting, as Volcano does. (Volcano sees the
  delete event; read level-triggered, a pod removed with no grace period is already gone and
  is simply recreated.)
- PodPending: a pod still Pending; only acts through a `timeout` (counted from its creation);
- Unknown: a pod in phase Unknown;
- TaskFailed: a container restarted at least the task's maxRetry times;
- TaskCompleted: every replica of the task Succeeded.
Only pods of the job's current `status.version` count, so a restarted job does not react to
the pods of its previous run. `*` matches the abnormal events (PodFailed, PodEvicted, Unknown,
TaskFailed): matched level-triggered against a pending pod or a completed task it would
restart a job forever. Task policies are tried before the job's; the first match wins.

    triggers(job, pods, version) -> list[Trigger]     every (event, action) the pods call for, with its due time
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from central.controllers import bus
from central.controllers.plugins.base import TASK_INDEX, TASK_SPEC

JOB_VERSION = "volcano.sh/job-version"
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"  # the controller deletes this pod itself
DEFAULT_TASK_MAX_RETRY = 3
STAR_EVENTS = frozenset({bus.POD_FAILED, bus.POD_EVICTED, bus.UNKNOWN, bus.TASK_FAILED})


@dataclass(frozen=True)
class Trigger:
    event: str
    action: str
    due: float  # epoch seconds at which the action applies (event time + timeout)
    task: str
    pod: str  # empty for task-level events
    exit_code: int | None = None

    def describe(self) -> str:
        subject = f"pod {self.pod}" if self.pod else f"task {self.task}"
        code = f" (exit code {self.exit_code})" if self.exit_code is not None else ""
        return f"{self.event} on {subject}{code}: {self.action}"


def parse_time(text: Any) -> float | None:
    """RFC 3339 (`2026-11-23T12:00:00Z`) as epoch seconds; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def pod_meta(pod: Mapping[str, Any], key: str) -> str:
    return str(((pod.get("metadata") or {}).get("annotations") or {}).get(key, ""))


def pod_version(pod: Mapping[str, Any]) -> int:
    value = pod_meta(pod, JOB_VERSION)
    return int(value) if value.isdigit() else 0


def pod_task(pod: Mapping[str, Any]) -> str:
    return pod_meta(pod, TASK_SPEC)


def pod_index(pod: Mapping[str, Any]) -> int:
    value = pod_meta(pod, TASK_INDEX)
    return int(value) if value.isdigit() else 0


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return list(status.get("containerStatuses") or []) + list(status.get("initContainerStatuses") or [])


def _exit_codes(pod: Mapping[str, Any]) -> list[int]:
    codes = []
    for c in _container_statuses(pod):
        terminated = (c.get("state") or {}).get("terminated") or (c.get("lastState") or {}).get("terminated")
        if terminated and terminated.get("exitCode"):
            codes.append(int(terminated["exitCode"]))
    return codes


def _finished_at(pod: Mapping[str, Any]) -> float | None:
    times = [
        parse_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt")) for c in _container_statuses(pod)
    ]
    known = [t for t in times if t is not None]
    return max(known) if known else _created(pod)


def _created(pod: Mapping[str, Any]) -> float | None:
    return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def _evicted(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if pod_phase(pod) == "Failed" and status.get("reason") == "Evicted":
        return True
    return is_terminating(pod) and OUT_OF_SYNC not in ((pod.get("metadata") or {}).get("annotations") or {})


def pod_events(pod: Mapping[str, Any], task_max_retry: int) -> list[tuple[str, float | None, list[int]]]:
    """(event, event time, exit codes) read off one pod."""
    phase = pod_phase(pod)
    out: list[tuple[str, float | None, list[int]]] = []
    if _evicted(pod):
        out.append((bus.POD_EVICTED, _finished_at(pod), []))
    elif phase == "Failed":
        out.append((bus.POD_FAILED, _finished_at(pod), _exit_codes(pod)))
    elif phase == "Pending" and not is_terminating(pod):
        out.append((bus.POD_PENDING, _created(pod), []))
    elif phase == "Unknown":
        out.append((bus.UNKNOWN, _created(pod), []))
    if any(int(c.get("restartCount") or 0) >= task_max_retry for c in _container_statuses(pod)):
        out.append((bus.TASK_FAILED, _finished_at(pod), []))
    return out


def _matches(policy: Mapping[str, Any], event: str, codes: list[int]) -> bool:
    if policy.get("exitCode") is not None:
        return event == bus.POD_FAILED and policy["exitCode"] in codes
    named = ([policy["event"]] if policy.get("event") else []) + list(policy.get("events") or [])
    return event in named or (bus.ANY in named and event in STAR_EVENTS)


def _first_match(policies: Iterable[Mapping[str, Any]], event: str, codes: list[int]) -> Mapping[str, Any] | None:
    return next((p for p in policies if isinstance(p, Mapping) and _matches(p, event, codes)), None)


def triggers(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], version: int) -> list[Trigger]:
    spec = job.get("spec") or {}
    job_policies = list(spec.get("policies") or [])
    tasks = {str(t.get("name")): t for t in spec.get("tasks") or []}
    current = [p for p in pods if pod_version(p) == version and pod_task(p) in tasks]
    found: list[Trigger] = []

    def consider(task: str, pod: str, event: str, when: float | None, codes: list[int]) -> None:
        policy = _first_match(list(tasks[task].get("policies") or []) + job_policies, event, codes)
        if policy is None:
            return
        timeout = bus.parse_duration(policy["timeout"]) if policy.get("timeout") else None
        if event == bus.POD_PENDING and timeout is None:
            return  # a pod is pending from the moment it is created; only a timeout makes this an event
        code = next((c for c in codes if c == policy.get("exitCode")), None)
        found.append(Trigger(event, str(policy.get("action")), (when or 0.0) + (timeout or 0.0), task, pod, code))

    for pod in current:
        task = pod_task(pod)
        max_retry = int(tasks[task].get("maxRetry") or DEFAULT_TASK_MAX_RETRY)
        for event, when, codes in pod_events(pod, max_retry):
            consider(task, str(pod["metadata"]["name"]), event, when, codes)
    for task, task_spec in tasks.items():
        replicas = int(task_spec.get("replicas", 1))
        done = [p for p in current if pod_task(p) == task and pod_phase(p) == "Succeeded" and pod_index(p) < replicas]
        if replicas and len(done) == replicas:
            finished = [t for t in (_finished_at(p) for p in done) if t is not None]
            consider(task, "", bus.TASK_COMPLETED, max(finished) if finished else None, [])
    return sorted(found, key=lambda t: (t.due, t.pod, t.task))


def is_ready(pod: Mapping[str, Any]) -> bool:
    """Succeeded, or Running and Ready (a Running pod that reports no Ready condition counts)."""
    phase = pod_phase(pod)
    if phase == "Succeeded":
        return True
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if c.get("type") == "Ready"]
    return phase == "Running" and (not ready or ready[0].get("status") == "True")
