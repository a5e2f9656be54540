"""Volcano's bus vocabulary (bus.volcano.sh/v1alpha1): job events, actions and Commands.

Shared by admission (which events and actions a user may name in a policy) and the job
controller (which derives events from pods and applies actions). A Command is how
`vcctl job suspend|resume` and `vcctl queue operate` talk to the controllers: an object
`{"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "action": "AbortJob",
"target": {"apiVersion": ..., "kind": "Job", "name": "<job>"}}` in the target's namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.model import fields

# Events.
ANY = "*"
POD_FAILED = "PodFailed"
POD_EVICTED = "PodEvicted"
POD_PENDING = "PodPending"
POD_RUNNING = "PodRunning"
UNKNOWN = "Unknown"
TASK_COMPLETED = "TaskCompleted"
TASK_FAILED = "TaskFailed"
JOB_UPDATED = "JobUpdated"
OUT_OF_SYNC = "OutOfSync"
COMMAND_ISSUED = "CommandIssued"

# Actions.
ABORT_JOB = "AbortJob"
RESTART_JOB = "RestartJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
RESTART_PARTITION = "RestartPartition"  # the failed pod's partition (partitionPolicy)
TERMINATE_JOB = "TerminateJob"
COMPLETE_JOB = "CompleteJob"
RESUME_JOB = "ResumeJob"
SYNC_JOB = "SyncJob"
ENQUEUE_JOB = "EnqueueJob"
OPEN_QUEUE = "OpenQueue"
CLOSE_QUEUE = "CloseQueue"

# What a user may name in a job's lifecycle policy (Volcano's webhook maps, newest version).
POLICY_EVENTS = (ANY, POD_FAILED, POD_EVICTED, POD_PENDING, UNKNOWN, TASK_COMPLETED, TASK_FAILED, JOB_UPDATED)
POLICY_ACTIONS = (ABORT_JOB, RESTART_JOB, RESTART_TASK, RESTART_POD, RESTART_PARTITION, TERMINATE_JOB, COMPLETE_JOB,
                  RESUME_JOB)
# Commands a person may issue against a job or a queue.
JOB_COMMANDS = (ABORT_JOB, RESUME_JOB, RESTART_JOB, TERMINATE_JOB, COMPLETE_JOB)
QUEUE_COMMANDS = (OPEN_QUEUE, CLOSE_QUEUE)


def command(action: str, target_kind: str, target_name: str, namespace: str = "", name: str = "") -> dict[str, Any]:
    """A Command object as vcctl creates it (name defaults to `<target>-<action lowercased>`)."""
    api = "batch.volcano.sh/v1alpha1" if target_kind == "Job" else "scheduling.volcano.sh/v1beta1"
    meta: dict[str, Any] = {"name": name or f"{target_name}-{action.lower()}"}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": meta,
        "action": action,
        "target": {"apiVersion": api, "kind": target_kind, "name": target_name},
    }


def commands_for(commands: list[Mapping[str, Any]], kind: str, name: str) -> list[Mapping[str, Any]]:
    """The Commands that target object `kind`/`name`, oldest first."""
    found = [
        c
        for c in commands
        if (c.get("target") or {}).get("kind") == kind and (c.get("target") or {}).get("name") == name
    ]
    return sorted(found, key=lambda c: str((c.get("metadata") or {}).get("creationTimestamp", "")))


def parse_duration(text: Any) -> float:
    """A Go duration (`90s`, `10m`, `1h30m`) in seconds, as a policy's `timeout` is written."""
    return fields.parse_duration(text, "").total_seconds()
