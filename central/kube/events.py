"""Kubernetes Events (core/v1) about pods and PodGroups, deduplicated like client-go's recorder.

The same (object, reason, message) within a run increments the existing Event's `count`
instead of creating a new object, so a pod pending for an hour costs one Event, not 3,600.
The dedup table is bounded (LRU). Failures are logged and dropped: an Event is a courtesy,
never a reason to stop scheduling.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any

from central.kube.client import CORE, ApiError, KubeClient, path

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, client: KubeClient, component: str, limit: int = 4096):
        self.client = client
        self.component = component
        self.limit = limit
        self._seen: OrderedDict[tuple[str, str, str], tuple[str, str, int]] = OrderedDict()
        self._lock = threading.Lock()  # binder workers emit concurrently

    def emit(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        with self._lock:
            self._emit(obj, event_type, reason, message)

    def _emit(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        dedup = (meta.get("uid") or f"{namespace}/{meta['name']}", reason, message)
        try:
            if dedup in self._seen:
                self._seen.move_to_end(dedup)
                name, ns, count = self._seen[dedup]
                self.client.merge_patch(path(CORE, "events", ns, name), {"count": count + 1, "lastTimestamp": _now()})
                self._seen[dedup] = (name, ns, count + 1)
                return
            name = f"{meta['name']}.{uuid.uuid4().hex[:16]}"
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
            self._seen[dedup] = (name, namespace, 1)
            if len(self._seen) > self.limit:
                self._seen.popitem(last=False)
        except ApiError as err:
            if err.code == 404:  # our earlier Event was garbage-collected: start a new one next time
                self._seen.pop(dedup, None)
            log.warning("event %s on %s/%s not recorded: %s", reason, namespace, meta["name"], err)
