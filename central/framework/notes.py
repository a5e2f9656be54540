"""What a session records for people: why a job waits, PodGroup conditions, pod and Queue
annotations.

Plugins write them through their handle, actions through theirs; closing the session turns
them into why-pending text, PodGroup statuses and the annotations written before a bind.
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any

from central.model.dra import DeviceClaimWrite
from central.model.objects import JobInfo, TaskInfo
from central.model.volumes import ClaimBinding


class Notes:
    def __init__(self, session_uid: str, now: datetime):
        self._uid = session_uid
        self._now = now
        self.jobs: dict[str, str] = {}  # job uid -> why a gate held it back (the latest note counts)
        self.invalid: set[str] = set()  # jobs a JobValid vote refused (a gang short of pods, say)
        self.conditions: dict[str, dict[str, Any]] = {}  # job uid -> the condition it ends the session with
        self.side_conditions: dict[str, dict[str, dict[str, Any]]] = {}  # job uid -> type -> a plugin's own condition
        self.events: list[tuple[str, str, str, str]] = []  # (job uid, Event type, reason, message)
        self.annotations: dict[str, dict[str, str]] = {}  # task uid -> annotations plugins chose
        self.queue_annotations: dict[str, dict[str, str]] = {}  # queue -> annotations plugins chose
        self.claim_bindings: dict[str, tuple[ClaimBinding, ...]] = {}  # task uid -> volume writes before its bind
        self.device_claims: dict[str, tuple[DeviceClaimWrite, ...]] = {}  # task uid -> ResourceClaim writes before its bind

    def note_job(self, job: JobInfo, text: str) -> None:
        self.jobs[job.uid] = text

    def job_note(self, job: JobInfo) -> str | None:
        return self.jobs.get(job.uid)

    def set_condition(self, job: JobInfo, kind: str, reason: str, message: str) -> None:
        """The PodGroup condition the job ends the session with (one per session and job)."""
        self.conditions[job.uid] = self.condition(kind, reason, message)

    def condition(self, kind: str, reason: str, message: str) -> dict[str, Any]:
        """A PodGroup condition stamped by this session."""
        return {"type": kind, "status": "True", "transitionID": self._uid, "reason": reason, "message": message,
                "lastTransitionTime": self._stamp}

    def set_side_condition(self, job: JobInfo, kind: str, status: bool, reason: str, message: str) -> None:
        """A condition of the plugin's own type, kept beside the one `set_condition` sets (a
        reservation stays visible while gang reports the job Unschedulable)."""
        condition = {**self.condition(kind, reason, message), "status": "True" if status else "False"}
        self.side_conditions.setdefault(job.uid, {})[kind] = condition

    def job_event(self, job: JobInfo, kind: str, reason: str, message: str) -> None:
        """An Event on the job's PodGroup (`kind` Normal or Warning), told once per call."""
        self.events.append((job.uid, kind, reason, message))

    @cached_property
    def _stamp(self) -> str:
        return self._now.strftime("%Y-%m-%dT%H:%M:%SZ")

    def annotate(self, task: TaskInfo, key: str, value: str | None) -> None:
        """Record (or with None, withdraw) an annotation for the pod, written before it binds."""
        notes = self.annotations.setdefault(task.uid, {})
        if value is None:
            notes.pop(key, None)
        else:
            notes[key] = value

    def annotation(self, task: TaskInfo, key: str) -> str | None:
        return self.annotations.get(task.uid, {}).get(key)

    def annotate_queue(self, queue: str, key: str, value: str) -> None:
        """Record an annotation to write on the Queue when the session closes."""
        self.queue_annotations.setdefault(queue, {})[key] = value

    def reserve_device_claims(self, task: TaskInfo, writes: tuple[DeviceClaimWrite, ...]) -> None:
        """Record (with none, withdraw) what the pod's bind writes first for its ResourceClaims."""
        if writes:
            self.device_claims[task.uid] = writes
        else:
            self.device_claims.pop(task.uid, None)

    def bind_claims(self, task: TaskInfo, bindings: tuple[ClaimBinding, ...]) -> None:
        """Record (with none, withdraw) what the pod's bind writes first for its claims."""
        if bindings:
            self.claim_bindings[task.uid] = bindings
        else:
            self.claim_bindings.pop(task.uid, None)
