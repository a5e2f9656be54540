"""Kubernetes Events (core/v1) about pods and PodGroups, with client-go's recorder manners.

- The same (object, reason, message) again increments the existing Event's `count` instead of
  creating a new object, and at most once per `refresh` seconds (client-go's spam filter
  allows one per object every 5 minutes after a burst), so a pod pending for an hour costs a
  handful of requests, not 3,600.
- Events have their own budget (a token bucket that drops rather than waits) and their own
  worker thread: `emit` only decides and queues, so a storm of pending pods never delays a
  scheduling cycle or a Binding.
- The dedup table is bounded (LRU). Failures are logged and dropped: an Event is a courtesy,
  never a reason to stop scheduling.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any

from central.kube.client import CORE, KubeClient, path

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, client: KubeClient, component: str, *, refresh: float = 300.0, qps: float = 20.0,
                 burst: int = 100, limit: int = 4096):
        self.client = client
        self.component = component
        self.refresh = refresh
        self.qps, self.burst = qps, burst
        self.limit = limit
        self.dropped = 0
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        # (uid, reason, message) -> (event name, namespace, count, monotonic time of last write)
        self._seen: OrderedDict[tuple[str, str, str], tuple[str, str, int, float]] = OrderedDict()
        self._lock = threading.Lock()  # binder workers emit concurrently
        # what `_write` takes, in its order
        self._work: queue.Queue[tuple[dict[str, Any], str, str, str, tuple[str, str, str], str, str, int]] = (
            queue.Queue(maxsize=1000))
        threading.Thread(target=self._worker, name="events", daemon=True).start()

    def emit(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        dedup = (meta.get("uid") or f"{namespace}/{meta['name']}", reason, message)
        with self._lock:
            seen = self._seen.get(dedup)
            now = time.monotonic()
            if seen is not None and now - seen[3] < self.refresh:
                return
            if not self._take(now):
                self.dropped += 1
                return
            name = seen[0] if seen else f"{meta['name']}.{uuid.uuid4().hex[:16]}"
            count = seen[2] + 1 if seen else 1
            self._seen[dedup] = (name, namespace, count, now)
            self._seen.move_to_end(dedup)
            if len(self._seen) > self.limit:
                self._seen.popitem(last=False)
        try:
            self._work.put_nowait((obj, event_type, reason, message, dedup, name, namespace, count))
        except queue.Full:
            self.dropped += 1

    def _worker(self) -> None:
        while True:
            self._write(*self._work.get())

    def _write(self, obj: dict[str, Any], event_type: str, reason: str, message: str, dedup: tuple[str, str, str],
               name: str, namespace: str, count: int) -> None:
        meta = obj["metadata"]
        try:
            if count > 1:
                self.client.merge_patch(path(CORE, "events", namespace, name),
                                        {"count": count, "lastTimestamp": _now()})
                return
            self.client.create(path(CORE, "events", namespace), {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta["name"],
                                   "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                                   "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": message, "type": event_type, "count": 1,
                "firstTimestamp": _now(), "lastTimestamp": _now(),
                "source": {"component": self.component}, "reportingComponent": self.component,
            })
        except Exception as err:  # ApiError or the network: start afresh next time
            with self._lock:
                self._seen.pop(dedup, None)
            log.warning("event %s on %s/%s not recorded: %s", reason, namespace, meta["name"], err)

    def _take(self, now: float) -> bool:
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
