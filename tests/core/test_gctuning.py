"""The collector setting of the processes that hold a cluster in memory (`central.gctuning`)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from central import gctuning


@pytest.fixture
def thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def full_collections_while_a_cache_churns() -> int:
    """A watch cache's life: 30,000 objects arrive, then each is replaced twice by a new tree.
    Counts the full collections this thread's allocations set off."""
    full = 0
    me = threading.get_ident()

    def count(phase: str, info: dict[str, Any]) -> None:
        nonlocal full
        full += phase == "start" and info["generation"] == 2 and threading.get_ident() == me

    gc.collect()  # every generation's count starts at zero
    gc.callbacks.append(count)
    try:
        cache: dict[int, dict[str, Any]] = {}
        for _ in range(3):
            for i in range(30_000):
                cache[i] = {"metadata": {"name": f"pod-{i}", "labels": {"app": "x"}}, "spec": {"containers": [{}]}}
    finally:
        gc.callbacks.remove(count)
    return full


def test_a_churning_cache_sets_off_no_full_collection(thresholds: None) -> None:
    gc.set_threshold(700, 10, 10)  # CPython's defaults (a command run in this process may have set others)
    assert full_collections_while_a_cache_churns() > 0
    gctuning.for_large_heaps().set()
    assert gc.get_threshold() == (700, 10, gctuning.NEVER)  # the young generations as they were
    assert full_collections_while_a_cache_churns() == 0


def test_the_timer_runs_the_full_collections(thresholds: None) -> None:
    collected = threading.Event()

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2 and threading.current_thread().name == "full-gc":
            collected.set()

    gc.callbacks.append(seen)
    stop = gctuning.for_large_heaps(every=0.01)
    try:
        assert collected.wait(10)
    finally:
        stop.set()
        gc.callbacks.remove(seen)


def test_a_command_run_again_in_the_process_finds_the_timer_running(thresholds: None) -> None:
    def timers() -> int:
        return sum(thread.name == "full-gc" for thread in threading.enumerate())

    first = gctuning.for_large_heaps()
    try:
        running = timers()
        assert gctuning.for_large_heaps() is first
        assert timers() == running
    finally:
        first.set()
    again = gctuning.for_large_heaps()  # the stopped timer is not handed out
    try:
        assert again is not first and not again.is_set()
    finally:
        again.set()
