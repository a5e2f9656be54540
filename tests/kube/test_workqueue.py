"""The controllers' work queue: dedup, one worker per key, delays and backoff."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from central.kube.workqueue import WorkQueue


def test_a_waiting_key_is_queued_once():
    q = WorkQueue()
    for key in ("a", "b", "a", "a"):
        q.add(key)
    assert [q.get(0), q.get(0), q.get(0)] == ["a", "b", None]


def test_a_key_added_while_processing_comes_back_after_done():
    q = WorkQueue()
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    assert q.get(0) is None  # not handed to a second worker
    q.done("a")
    assert q.get(0) == "a"


def test_delayed_keys_come_in_time_order():
    q = WorkQueue()
    q.add_after("late", 0.2)
    q.add_after("soon", 0.05)
    assert q.get(0) is None
    assert q.get(1) == "soon"
    assert q.get(1) == "late"


def test_backoff_doubles_and_forget_resets():
    q = WorkQueue(base_delay=0.005, max_delay=0.02)
    assert [q.retry("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.02]
    assert q.failures("a") == 4
    q.forget("a")
    assert q.failures("a") == 0 and q.retry("a") == 0.005


def test_close_wakes_a_waiting_worker():
    q = WorkQueue()
    q.close()
    assert q.get() is None


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.sampled_from(["add", "get", "done"]), st.sampled_from("abc")), max_size=40))
def test_never_two_workers_on_one_key_and_nothing_lost(ops):
    q = WorkQueue()
    held: list[str] = []
    wanted: set[str] = set()  # keys added since they were last handed out
    for op, key in ops:
        if op == "add":
            q.add(key)
            wanted.add(key)
        elif op == "get":
            got = q.get(0)
            if got is not None:
                assert got not in held
                held.append(got)
                wanted.discard(got)
        elif key in held:
            held.remove(key)
            q.done(key)
    for key in list(held):
        q.done(key)
    drained = set()
    while (key := q.get(0)) is not None:
        drained.add(key)
        q.done(key)
    assert wanted <= drained
