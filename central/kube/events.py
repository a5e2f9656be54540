"""Kubernetes Events (core/v1) about pods, PodGroups and Jobs, with client-go's recorder manners.

- Events are correlated as client-go does (`central.kube.correlator`): the same (object, type,
  reason, message) again increments the existing Event's `count` (a patch, not a new object);
  many distinct messages of one reason on one object within 10 minutes become one combined
  Event; and per (object, type, reason, message) a spam filter writes at most 25 in a burst,
  then one every 5 minutes, while the count keeps every occurrence.
- Events have their own budget (a token bucket that drops rather than waits) and their own
  worker thread: `emit` only decides and queues, so a storm of pending pods never delays a
  scheduling cycle or a Binding.
- Failures are logged and dropped: an Event is a courtesy, never a reason to stop scheduling.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from central.kube.client import CORE, ApiError, KubeClient, path
from central.kube.correlator import Correlated, EventCorrelator

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, client: KubeClient, component: str, *, qps: float = 20.0, burst: int = 100,
                 correlator: EventCorrelator | None = None, clock: Callable[[], float] = time.monotonic):
        self.client = client
        self.component = component
        self.qps, self.burst = qps, burst
        self.correlator = correlator or EventCorrelator()
        self.clock = clock
        self.dropped = 0
        self._tokens = float(burst)
        self._stamp = clock()
        self._names: OrderedDict[tuple[str, ...], str] = OrderedDict()  # correlation key -> Event name
        self._lock = threading.Lock()  # binder workers emit concurrently
        # what `_write` takes, in its order; None ends the worker
        self._work: queue.Queue[tuple[dict[str, Any], str, str, Correlated, str, str] | None] = (
            queue.Queue(maxsize=1000))
        self._thread = threading.Thread(target=self._worker, name="events", daemon=True)
        self._thread.start()

    def emit(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        involved = (str(obj.get("kind") or ""), namespace, str(meta["name"]), str(meta.get("uid") or ""),
                    str(obj.get("apiVersion") or ""))
        with self._lock:
            now = self.clock()
            seen = self.correlator.correlate(involved, event_type, reason, message, now)
            if seen.skip:
                return
            if not self._take(now):  # over budget: not written now, still counted by the correlator
                self.dropped += 1
                return
            name = self._names.get(seen.key) if seen.count > 1 else None
            if name is None:
                name = f"{meta['name']}.{uuid.uuid4().hex[:16]}"
            self._names[seen.key] = name
            self._names.move_to_end(seen.key)
            if len(self._names) > self.correlator.size:
                self._names.popitem(last=False)
        try:
            self._work.put_nowait((obj, event_type, reason, seen, name, namespace))
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, for up to `timeout` seconds, then end the worker thread (a
        scheduler's leadership term owns one recorder; the process outlives many terms)."""
        try:
            self._work.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _worker(self) -> None:
        while (work := self._work.get()) is not None:
            self._write(*work)

    def _write(self, obj: dict[str, Any], event_type: str, reason: str, seen: Correlated, name: str,
               namespace: str) -> None:
        meta = obj["metadata"]
        try:
            if seen.count > 1:
                try:
                    self.client.merge_patch(path(CORE, "events", namespace, name),
                                            {"count": seen.count, "lastTimestamp": _now(), "message": seen.message})
                    return
                except ApiError as err:
                    if err.code != 404:  # gone (Events expire): created again with its count, as client-go
                        raise
            self.client.create(path(CORE, "events", namespace), {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta["name"],
                                   "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                                   "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": seen.message, "type": event_type, "count": seen.count,
                "firstTimestamp": _now(), "lastTimestamp": _now(),
                "source": {"component": self.component}, "reportingComponent": self.component,
            })
        except Exception as err:  # ApiError or the network: start afresh next time
            with self._lock:
                self.correlator.forget(seen.key)
            log.warning("event %s on %s/%s not recorded: %s", reason, namespace, meta["name"], err)

    def _take(self, now: float) -> bool:
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
