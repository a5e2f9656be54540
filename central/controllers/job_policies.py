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
- Unknown: a pod in phase Unknown, or the job's PodGroup (of its current version) in phase
  Unknown: the scheduler found part of a running gang unschedulable. Volcano's job controller
  raises the job's Unknown event then, matched by the job's own policies only (no task's);
- TaskFailed: a container restarted at least the task's maxRetry times;
- TaskCompleted: every replica of the task Succeeded.
Only pods of the job's current `status.version` count, so a restarted job does not react to
the pods of its previous run. `*` matches the abnormal events (PodFailed, PodEvicted, Unknown,
TaskFailed): matched level-triggered against a pending pod or a completed task it would
restart a job forever. Task policies are tried before the job's; the first match wins.

    read_pod(pod) -> PodFacts                          what the controller reads off a pod, read once
    triggers(spec, pods, version, podgroup=None) -> list[Trigger]
                                                       every (event, action) the pods and the PodGroup call
                                                       for, with its due time
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from central.controllers import bus
from central.controllers.jobplugins.base import TASK_INDEX, TASK_SPEC
from central.model.jobspec import JobSpec, TaskSpec

JOB_VERSION = "volcano.sh/job-version"
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"  # the controller deletes this pod itself
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
        subject = f"pod {self.pod}" if self.pod else f"task {self.task}" if self.task else "the job's PodGroup"
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


@functools.lru_cache(maxsize=1024)  # a simulated instant stamps many pods and jobs alike
def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodFacts(NamedTuple):  # a NamedTuple: a job's pods are read on every reconcile, and it is built fastest
    name: str
    task: str  # the task-spec annotation
    pod_index: int  # the task-index annotation (`index` would hide the tuple's method)
    version: int  # the job version the pod was made for
    phase: str
    terminating: bool  # has a deletionTimestamp
    pod: Mapping[str, Any]


def read_pod(pod: Mapping[str, Any]) -> PodFacts:
    meta = pod["metadata"]
    annotations = meta.get("annotations") or {}
    index, version = str(annotations.get(TASK_INDEX, "")), str(annotations.get(JOB_VERSION, ""))
    return PodFacts(
        str(meta["name"]),
        str(annotations.get(TASK_SPEC, "")),
        int(index) if index.isdigit() else 0,
        int(version) if version.isdigit() else 0,
        str((pod.get("status") or {}).get("phase") or "Pending"),
        bool(meta.get("deletionTimestamp")),
        pod,
    )


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


def _evicted(facts: PodFacts) -> bool:
    if facts.phase == "Failed" and (facts.pod.get("status") or {}).get("reason") == "Evicted":
        return True
    return facts.terminating and OUT_OF_SYNC not in (facts.pod["metadata"].get("annotations") or {})


def pod_events(facts: PodFacts, task_max_retry: int) -> list[tuple[str, float | None, list[int]]]:
    """(event, event time, exit codes) read off one pod."""
    pod, phase = facts.pod, facts.phase
    out: list[tuple[str, float | None, list[int]]] = []
    if _evicted(facts):
        out.append((bus.POD_EVICTED, _finished_at(pod), []))
    elif phase == "Failed":
        out.append((bus.POD_FAILED, _finished_at(pod), _exit_codes(pod)))
    elif phase == "Pending" and not facts.terminating:
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


def triggers(spec: JobSpec, pods: Iterable[PodFacts], version: int,
             podgroup: Mapping[str, Any] | None = None) -> list[Trigger]:
    if not any(t.policies for t in spec.tasks):
        return []  # nothing to match: the common case, and reading every pod's events is not free
    tasks = {t.name: t for t in spec.tasks}
    current = [p for p in pods if p.version == version and p.task in tasks]
    found: list[Trigger] = []

    def consider(task: TaskSpec, pod: str, event: str, when: float | None, codes: list[int]) -> None:
        policy = _first_match(task.policies, event, codes)
        if policy is None:
            return
        timeout = bus.parse_duration(policy["timeout"]) if policy.get("timeout") else None
        if event == bus.POD_PENDING and timeout is None:
            return  # a pod is pending from the moment it is created; only a timeout makes this an event
        code = next((c for c in codes if c == policy.get("exitCode")), None)
        found.append(Trigger(event, str(policy.get("action")), (when or 0.0) + (timeout or 0.0), task.name, pod, code))

    for pod in current:
        task = tasks[pod.task]
        for event, when, codes in pod_events(pod, task.max_retry):
            consider(task, pod.name, event, when, codes)
    if podgroup is not None and _unknown_gang(podgroup, version):
        policy = _first_match(spec.policies, bus.UNKNOWN, [])
        if policy is not None:
            timeout = bus.parse_duration(policy["timeout"]) if policy.get("timeout") else 0.0
            found.append(Trigger(bus.UNKNOWN, str(policy.get("action")), (_phase_since(podgroup) or 0.0) + timeout, "", ""))
    for task in spec.tasks:
        done = [p for p in current if p.task == task.name and p.phase == "Succeeded" and p.pod_index < task.replicas]
        if task.replicas and len(done) == task.replicas:
            finished = [t for t in (_finished_at(p.pod) for p in done) if t is not None]
            consider(task, "", bus.TASK_COMPLETED, max(finished) if finished else None, [])
    return sorted(found, key=lambda t: (t.due, t.pod, t.task))


def _unknown_gang(podgroup: Mapping[str, Any] | None, version: int) -> bool:
    """The PodGroup of this version of the job is Unknown (one left from before a restart is not)."""
    if podgroup is None or (podgroup.get("status") or {}).get("phase") != bus.UNKNOWN:
        return False
    stamped = ((podgroup.get("metadata") or {}).get("annotations") or {}).get(JOB_VERSION)
    return stamped is None or str(stamped) == str(version)


def _phase_since(podgroup: Mapping[str, Any]) -> float | None:
    """When the PodGroup's conditions last changed: the time of the Unknown event, as known."""
    times = [parse_time(c.get("lastTransitionTime")) for c in (podgroup.get("status") or {}).get("conditions") or []
             if isinstance(c, Mapping)]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def is_ready(facts: PodFacts) -> bool:
    """Succeeded, or Running and Ready (a Running pod that reports no Ready condition counts)."""
    if facts.phase == "Succeeded":
        return True
    conditions = (facts.pod.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if c.get("type") == "Ready"]
    return facts.phase == "Running" and (not ready or ready[0].get("status") == "True")
