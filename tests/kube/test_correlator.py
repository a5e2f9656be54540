"""client-go's event correlator: repeats counted, similar messages combined, spam filtered."""

from __future__ import annotations

from central.kube.correlator import COMBINED, EventCorrelator

POD = ("Pod", "ns", "a", "uid-a", "v1")


def test_a_repeat_is_the_same_event_counted_not_dropped() -> None:
    c = EventCorrelator()
    first = c.correlate(POD, "Warning", "FailedScheduling", "no node", now=0.0)
    again = c.correlate(POD, "Warning", "FailedScheduling", "no node", now=1.0)
    assert (first.skip, first.count, again.skip, again.count) == (False, 1, False, 2)
    assert first.key == again.key


def test_the_spam_filter_writes_25_then_one_per_5_minutes_but_counts_every_one() -> None:
    c = EventCorrelator()
    seen = [c.correlate(POD, "Warning", "Unschedulable", "0/1 nodes", now=float(t)) for t in range(100)]
    assert sum(not s.skip for s in seen) == 25  # the burst; refill 100 s x 1/300 s < 1 token
    later = c.correlate(POD, "Warning", "Unschedulable", "0/1 nodes", now=400.0)
    # 300 s after the 25th it may write again, carrying all 101 occurrences
    assert (later.skip, later.count) == (False, 101)


def test_ten_distinct_messages_of_one_reason_are_combined() -> None:
    c = EventCorrelator()
    out = [c.correlate(POD, "Warning", "FailedScheduling", f"message {i}", now=float(i)) for i in range(12)]
    assert [o.message.startswith(COMBINED) for o in out] == [False] * 9 + [True] * 3
    assert out[9].key == out[10].key and (out[9].count, out[11].count) == (1, 3)
    assert out[11].message == COMBINED + "message 11"


def test_other_objects_and_old_similar_events_are_apart() -> None:
    c = EventCorrelator()
    other = ("Pod", "ns", "b", "uid-b", "v1")
    for i in range(9):
        c.correlate(POD, "Warning", "FailedScheduling", f"m{i}", now=0.0)
    assert not c.correlate(other, "Warning", "FailedScheduling", "m9", now=0.0).message.startswith(COMBINED)
    # ten minutes on, the similar-message record starts afresh
    assert not c.correlate(POD, "Warning", "FailedScheduling", "m9", now=601.0).message.startswith(COMBINED)


def test_a_forgotten_event_starts_afresh() -> None:
    c = EventCorrelator()
    first = c.correlate(POD, "Normal", "Scheduled", "to n1", now=0.0)
    c.forget(first.key)
    assert c.correlate(POD, "Normal", "Scheduled", "to n1", now=1.0).count == 1
