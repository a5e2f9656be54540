"""Fixtures of the agent-stream tests."""

from __future__ import annotations

import threading
from typing import Callable, Iterator

import pytest

from nodeagent.stream import ReportStream


@pytest.fixture
def agent_runner() -> Iterator[Callable[[ReportStream], threading.Thread]]:
    """Starts agent streams on threads; stops and joins them when the test ends."""
    stops: list[tuple[threading.Event, threading.Thread]] = []

    def start(stream: ReportStream) -> threading.Thread:
        stop = threading.Event()
        thread = threading.Thread(target=stream.run, args=(stop,), daemon=True)
        thread.start()
        stops.append((stop, thread))
        return thread

    yield start
    for stop, thread in stops:
        stop.set()
        thread.join(timeout=5)
        assert not thread.is_alive(), "agent stream did not stop"
