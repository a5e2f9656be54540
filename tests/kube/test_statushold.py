"""Which statuses the sink hands over at a flush: a PodGroup's message-only changes, and
every change of a Queue's, held back for their interval."""

from __future__ import annotations

from typing import Any

from central.scheduler.statushold import StatusHold, message_blind, never_urgent


def status(message: str, reason: str = "NotEnoughTasks", phase: str = "Pending", **extra: Any) -> dict[str, Any]:
    condition = {"type": "Unschedulable", "status": "True", "reason": reason, "message": message,
                 "lastTransitionTime": f"2026-11-27T10:00:{len(message):02d}Z"}
    return {"phase": phase, "conditions": [condition], **extra}


def test_a_gangs_counts_are_written_once_per_interval_the_newest_then() -> None:
    hold = StatusHold(10.0, message_blind)
    assert hold.due({"ns/pg": status("valid: 1, min: 9")}, now=0.0) == [("ns/pg", status("valid: 1, min: 9"))]
    assert hold.due({"ns/pg": status("valid: 2, min: 9")}, now=1.0) == []
    assert hold.due({"ns/pg": status("valid: 3, min: 9")}, now=2.0) == []
    assert hold.due({}, now=9.9) == []
    assert hold.due({}, now=10.0) == [("ns/pg", status("valid: 3, min: 9"))]  # held, not lost
    assert hold.due({}, now=11.0) == []
    assert hold.due({"ns/pg": status("valid: 4, min: 9")}, now=12.0) == []  # 2 s after the last write


def test_any_other_change_goes_at_once_and_drops_what_was_held() -> None:
    hold = StatusHold(10.0, message_blind)
    hold.due({"ns/pg": status("valid: 1, min: 9")}, now=0.0)
    assert hold.due({"ns/pg": status("valid: 2, min: 9")}, now=1.0) == []
    changes = [status("0/9 tasks in gang unschedulable", reason="NotEnoughResources"),
               status("valid: 2, min: 9", phase="Inqueue"), status("valid: 2, min: 9", running=1)]
    for now, changed in enumerate(changes, start=2):
        assert hold.due({"ns/pg": changed}, now=float(now)) == [("ns/pg", changed)]
    assert hold.due({}, now=30.0) == []  # the held message went with the change


def test_the_last_flush_hands_over_everything_and_other_podgroups_are_not_held() -> None:
    hold = StatusHold(10.0, message_blind)
    hold.due({"ns/a": status("valid: 1, min: 9")}, now=0.0)
    assert hold.due({"ns/a": status("valid: 2, min: 9"), "ns/b": status("valid: 2, min: 9")}, now=1.0) == [
        ("ns/b", status("valid: 2, min: 9"))]
    assert hold.due({}, now=2.0, everything=True) == [("ns/a", status("valid: 2, min: 9"))]


def test_a_queues_status_goes_once_per_interval_whatever_changed() -> None:
    hold = StatusHold(1.0, never_urgent)
    assert hold.due({"q": {"allocated": {"cpu": "1"}}}, now=0.0) == [("q", {"allocated": {"cpu": "1"}})]
    assert hold.due({"q": {"allocated": {"cpu": "2"}}}, now=0.5) == []
    assert hold.due({"q": {"allocated": {"cpu": "3"}}}, now=0.9) == []
    assert hold.due({}, now=1.0) == [("q", {"allocated": {"cpu": "3"}})]
