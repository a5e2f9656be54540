"""client-go's event correlator, as a pure function of the events seen and the clock.

Each event goes through three steps, in client-go's order (`EventCorrelator.EventCorrelate`):

1. **aggregate**: events alike but for the message (same object, type and reason) are
   counted per object; from the 10th distinct message within 10 minutes on, they become one
   Event whose message is "(combined from similar events): <latest message>";
2. **observe**: an event seen before (same object, type, reason and message) is the same
   Event again: its `count` goes up and it is patched, not created anew;
3. **spam filter**: per object, type, reason and message, a token bucket of 25 that refills
   one every 5 minutes; an event over it is not written, but step 2 has counted it, so the
   next write carries the true count.

So a pod pending for an hour costs a handful of writes, and `kubectl describe` still says how
often it happened ("x42 over 1h"), where dropping repeats would hide it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TypeVar

AGGREGATE_MAX_EVENTS = 10  # client-go defaultAggregateMaxEvents
AGGREGATE_INTERVAL = 600.0  # seconds, defaultAggregateIntervalInSeconds
SPAM_BURST = 25  # defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # defaultSpamQPS: one every 5 minutes
CACHE_SIZE = 4096  # maxLruCacheEntries
COMBINED = "(combined from similar events): "

ObjectKey = tuple[str, ...]  # the involved object: kind, namespace, name, uid, apiVersion

V = TypeVar("V")  # what one of the correlator's caches holds


@dataclass(frozen=True)
class Correlated:
    """What to do with one event: `skip` it, or write `message` with `count` as the Event
    `key` names: a new one when `count` is 1, else a patch of the one written before."""

    skip: bool
    key: tuple[str, ...]
    message: str
    count: int


@dataclass
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class EventCorrelator:
    def __init__(self, max_events: int = AGGREGATE_MAX_EVENTS, interval: float = AGGREGATE_INTERVAL,
                 burst: int = SPAM_BURST, qps: float = SPAM_QPS, size: int = CACHE_SIZE):
        self.max_events, self.interval = max_events, interval
        self.burst, self.qps, self.size = burst, qps, size
        self._aggregates: OrderedDict[tuple[str, ...], _Aggregate] = OrderedDict()
        self._counts: OrderedDict[tuple[str, ...], int] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()

    def correlate(self, obj: ObjectKey, event_type: str, reason: str, message: str, now: float) -> Correlated:
        key, message = self._aggregate(obj, event_type, reason, message, now)
        count = self._counts.get(key, 0) + 1
        _put(self._counts, key, count, self.size)
        skip = not self._allow((*obj, event_type, reason, message), now)
        return Correlated(skip, key, message, count)

    def forget(self, key: tuple[str, ...]) -> None:
        """The Event `key` names could not be written: the next one starts afresh."""
        self._counts.pop(key, None)

    def _aggregate(self, obj: ObjectKey, event_type: str, reason: str, message: str,
                   now: float) -> tuple[tuple[str, ...], str]:
        similar = (*obj, event_type, reason)
        record = self._aggregates.get(similar)
        if record is None or now - record.last > self.interval:
            record = _Aggregate()
        record.messages.add(message)
        record.last = now
        _put(self._aggregates, similar, record, self.size)
        if len(record.messages) < self.max_events:
            return (*similar, message), message
        record.messages.pop()  # bounded, as client-go's PopAny
        return (*similar, COMBINED), COMBINED + message

    def _allow(self, spam_key: tuple[str, ...], now: float) -> bool:
        bucket = self._buckets.get(spam_key)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * self.qps)
        bucket.stamp = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        _put(self._buckets, spam_key, bucket, self.size)
        return allowed


def _put(cache: OrderedDict[tuple[str, ...], V], key: tuple[str, ...], value: V, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    if len(cache) > size:
        cache.popitem(last=False)
