"""The Queue controller as a pure function: Open / Closing / Closed, the cascade, the counts.

    reconcile_queue(queue, queues, podgroups, commands=()) -> QueueDecision

`queues` maps every queue name to its object, `podgroups` are all PodGroups (only those in
this queue and its descendants, `subtree`, count), `commands` the bus Commands (OpenQueue / CloseQueue, as `vcctl queue
operate` creates them; the oldest one targeting this queue is applied and consumed).

- OpenQueue -> Open. CloseQueue -> Closing while the queue still holds unfinished PodGroups
  (phase other than Completed), else Closed; Closing -> Closed once they drain.
- Cascade: a queue whose parent is Closing or Closed closes too and is marked with the
  annotation `volcano.sh/closed-by-parent: "true"`; when the parent opens again, the queues it
  closed reopen (a queue closed by its own command stays closed). The decision carries the
  changes for every descendant at once (`cascade`), and each queue also checks its parent
  when reconciled, so a cascade interrupted half-way completes on the next pass.
- Status: state plus the number of PodGroups per phase (pending, inqueue, running, unknown,
  completed); `allocated` is the scheduler's and is kept. A queue without spec.parent gets
  `root` (`spec_patch`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from central.controllers import bus

OPEN, CLOSING, CLOSED = "Open", "Closing", "Closed"
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
ROOT = "root"
PODGROUP_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")


@dataclass(frozen=True)
class QueueChange:
    """A change to another queue: its new status.state and annotation edits (None removes)."""

    name: str
    state: str
    annotations: dict[str, str | None]


@dataclass
class QueueDecision:
    status: dict[str, Any] = field(default_factory=dict)  # this queue's whole new status
    status_changed: bool = False
    annotations: dict[str, str | None] = field(default_factory=dict)  # this queue's annotation edits
    spec_patch: dict[str, Any] = field(default_factory=dict)
    cascade: list[QueueChange] = field(default_factory=list)
    delete_commands: list[str] = field(default_factory=list)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _state(queue: Mapping[str, Any] | None) -> str:
    return str(((queue or {}).get("status") or {}).get("state") or OPEN)


def _parent(queue: Mapping[str, Any]) -> str | None:
    return None if _name(queue) == ROOT else str((queue.get("spec") or {}).get("parent") or ROOT)


def _closed_by_parent(queue: Mapping[str, Any]) -> bool:
    return ((queue.get("metadata") or {}).get("annotations") or {}).get(CLOSED_BY_PARENT) == "true"


def next_state(
    queue: Mapping[str, Any], parent_state: str, busy: bool, action: str | None
) -> tuple[str, dict[str, str | None]]:
    """(new state, annotation edits) for one queue."""
    state = _state(queue)
    closed = CLOSING if busy else CLOSED
    if action == bus.OPEN_QUEUE:
        return OPEN, ({CLOSED_BY_PARENT: None} if _closed_by_parent(queue) else {})
    if action == bus.CLOSE_QUEUE:
        return (state if state == CLOSED else closed), ({CLOSED_BY_PARENT: None} if _closed_by_parent(queue) else {})
    if parent_state in (CLOSING, CLOSED) and state == OPEN:
        return closed, {CLOSED_BY_PARENT: "true"}
    if parent_state == OPEN and _closed_by_parent(queue) and state != OPEN:
        return OPEN, {CLOSED_BY_PARENT: None}
    if state == CLOSING and not busy:
        return CLOSED, {}
    return state, {}


def reconcile_queue(
    queue: Mapping[str, Any],
    queues: Mapping[str, Mapping[str, Any]],
    podgroups: Iterable[Mapping[str, Any]],
    commands: Iterable[Mapping[str, Any]] = (),
) -> QueueDecision:
    name = _name(queue)
    by_queue: dict[str, list[Mapping[str, Any]]] = {}
    for pg in podgroups:
        by_queue.setdefault(str((pg.get("spec") or {}).get("queue") or "default"), []).append(pg)
    mine = bus.commands_for(list(commands), "Queue", name)
    command = mine[0] if mine else None
    decision = QueueDecision(delete_commands=[str(command["metadata"]["name"])] if command else [])
    parent = _parent(queue)
    parent_state = _state(queues.get(parent)) if parent else OPEN
    state, decision.annotations = next_state(
        queue, parent_state, _busy(by_queue.get(name, [])), str(command.get("action")) if command else None
    )
    status = copy.deepcopy(dict(queue.get("status") or {}))
    status["state"] = state
    counts: dict[str, int] = {}  # one pass over the queue's PodGroups, not one per phase
    for pg in by_queue.get(name, []):
        phase = _pg_phase(pg)
        counts[phase] = counts.get(phase, 0) + 1
    for phase in PODGROUP_PHASES:
        status[phase.lower()] = counts.get(phase, 0)
    decision.status = status
    decision.status_changed = status != dict(queue.get("status") or {})
    if parent is not None and not (queue.get("spec") or {}).get("parent"):
        decision.spec_patch = {"parent": ROOT}
    decision.cascade = _cascade(name, state, queues, by_queue)
    return decision


def subtree(name: str, queues: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The queue and its descendants: the queues whose PodGroups `reconcile_queue` reads."""
    children: dict[str | None, list[str]] = {}
    for child, queue in queues.items():
        children.setdefault(_parent(queue), []).append(child)
    out, pending = {name}, [name]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in out:
                out.add(child)
                pending.append(child)
    return out


def _cascade(
    name: str, state: str, queues: Mapping[str, Mapping[str, Any]], by_queue: Mapping[str, list[Mapping[str, Any]]]
) -> list[QueueChange]:
    changes: list[QueueChange] = []
    pending = [(name, state)]
    while pending:
        parent, parent_state = pending.pop(0)
        for child_name in sorted(n for n, q in queues.items() if n != parent and _parent(q) == parent):
            child = queues[child_name]
            child_state, annotations = next_state(child, parent_state, _busy(by_queue.get(child_name, [])), None)
            if child_state != _state(child) or annotations:
                changes.append(QueueChange(child_name, child_state, annotations))
            pending.append((child_name, child_state))
    return changes


def _pg_phase(pg: Mapping[str, Any]) -> str:
    return str((pg.get("status") or {}).get("phase") or "Pending")


def _busy(podgroups: list[Mapping[str, Any]]) -> bool:
    return any(_pg_phase(pg) != "Completed" for pg in podgroups)
