"""A work queue of object keys with client-go's guarantees, for the controller loops.

- A key waiting in the queue is there once, however many events named it.
- A key is never handed to two workers at once: if it is added while being processed it is
  marked dirty and handed out again after `done`.
- `add_after` delays a key (policy timeouts, TTL after finish); `retry` delays it with
  per-key exponential backoff (5 ms doubling up to 1000 s, Volcano's rate limiter) and
  `forget` resets the backoff after a success.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque


class WorkQueue:
    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0):
        self.base_delay, self.max_delay = base_delay, max_delay
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._waiting: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._delayed: list[tuple[float, int, str]] = []
        self._order = itertools.count()
        self._failures: dict[str, int] = {}
        self._closed = False

    def add(self, key: str) -> None:
        with self._cond:
            self._add(key)

    def _add(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._waiting:
            self._waiting.add(key)
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            return self.add(key)
        with self._cond:
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._order), key))
            self._cond.notify()

    def retry(self, key: str) -> float:
        """Requeue after a failure, with backoff; returns the delay chosen."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = min(self.base_delay * 2.0 ** failures, self.max_delay)
        self.add_after(key, delay)
        return delay

    def failures(self, key: str) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> str | None:
        """The next key to process (call `done` with it afterwards); None once closed (what
        still waits is never handed out) or on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:  # keys still waiting are dropped: the loop is stopping (or lost its lease)
                    return None
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    self._add(heapq.heappop(self._delayed)[2])
                if self._queue:
                    key = self._queue.popleft()
                    self._waiting.discard(key)
                    self._processing.add(key)
                    return key
                if deadline is not None and now >= deadline:
                    return None
                wake = [t for t in (deadline, self._delayed[0][0] if self._delayed else None) if t is not None]
                self._cond.wait(max(0.0, min(wake) - now) if wake else None)

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add(key)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)
