"""Which pending pods get PodScheduled=False written: once per change, message changes rate-limited."""

from __future__ import annotations

from typing import Any

from central.scheduler.podscheduled import PodScheduledMarks


def pending(conditions: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "ns"}, "spec": spec, "status": {"conditions": conditions or []}}


def test_a_pending_pod_gets_the_shape_autoscalers_read() -> None:
    condition = PodScheduledMarks().due("ns/a", pending(), "0/3 nodes are available", now=0.0)
    assert condition is not None
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "PodScheduled", "False", "Unschedulable", "0/3 nodes are available")


def test_it_is_written_once_while_it_says_the_same() -> None:
    marks = PodScheduledMarks()
    assert marks.due("ns/a", pending(), "why", now=0.0) is not None
    assert marks.due("ns/a", pending(), "why", now=1.0) is None  # the watch has not shown the write yet


def test_a_condition_already_there_is_not_written_again_after_a_restart() -> None:
    there = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "why"}]
    assert PodScheduledMarks().due("ns/a", pending(there), "why", now=0.0) is None


def test_a_new_message_waits_for_the_interval_a_new_reason_does_not() -> None:
    marks = PodScheduledMarks(message_interval=10.0)
    marks.due("ns/a", pending(), "first", now=0.0)
    assert marks.due("ns/a", pending(), "second", now=5.0) is None
    assert marks.due("ns/a", pending(), "second", now=11.0) is not None
    error = [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": "bind refused",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    fresh = PodScheduledMarks(message_interval=10.0)
    condition = fresh.due("ns/a", pending(error), "why", now=0.0)
    assert condition is not None and condition["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # still False since


def test_bound_gated_and_forgotten_pods() -> None:
    marks = PodScheduledMarks()
    assert marks.due("ns/a", pending(nodeName="n1"), "why", now=0.0) is None
    assert marks.due("ns/a", pending(schedulingGates=[{"name": "g"}]), "why", now=0.0) is None
    marks.due("ns/a", pending(), "why", now=0.0)
    marks.keep_only([])  # bound meanwhile: pending again later is a new story
    assert marks.due("ns/a", pending(), "why", now=1.0) is not None
