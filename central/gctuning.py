"""Python's cyclic garbage collector, set for the processes that hold a whole cluster in memory.

The scheduler and the controllers keep every watched object decoded: hundreds of thousands of
dicts and lists, each living as long as the object it mirrors and replaced by a new tree on
each of its watch events. CPython scans its oldest generation whenever a quarter of it is new,
which such churn reaches every few seconds, and each of those full scans walks the whole heap
with the GIL held. In the e2e bench's pod case (1,000 nodes, 10,000 pods) the scheduler made
16 of them in 100 s, about 0.4 s each: a tenth of its CPU, and a stall for every pod in flight.
The Job controller spent 15-25% of its CPU on them while it created pods.

Garbage cycles still need a full scan now and then: each scheduling session is one (its
plugins and the handle they register on refer to each other) and outlives the young
generations. So `for_large_heaps` leaves the young generations as they are and makes the full
scan a timed one: at most one every `FULL_COLLECTION_EVERY` seconds, by a thread of its own.
The simulator holds a cluster too, and a whole workload besides: the 1,000-node week spent 16.1 s
of its 160.1 s CPU in collections with CPython's setting, 10.7 s of 154.5 s with this one (one
run after the other, collections timed with a gc.callbacks hook).
"""

from __future__ import annotations

import gc
import threading

FULL_COLLECTION_EVERY = 30.0  # seconds: bounds both the scans' share and the cyclic garbage held
NEVER = 1 << 30  # middle-generation collections before a full one: the timer runs them instead


_timer: threading.Event | None = None  # the running timer's stop


def for_large_heaps(every: float = FULL_COLLECTION_EVERY) -> threading.Event:
    """Full collections every `every` seconds only, until the returned event is set. A
    process calls it at its start; a command run again in the same process (tests do) finds
    the timer running and gets its event."""
    global _timer
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    if _timer is None or _timer.is_set():
        _timer = threading.Event()
        threading.Thread(target=_collect_every, args=(every, _timer), name="full-gc", daemon=True).start()
    return _timer


def _collect_every(every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        gc.collect()
