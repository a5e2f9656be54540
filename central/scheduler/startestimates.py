"""The scheduler's `caldera.sh/estimated-start` annotation on waiting PodGroups.

Every `period` seconds (the scheduler's `--estimate-start-period`; 0, the default, is off), the
leader copies its cache between two cycles and, on a thread of its own, runs the forward
estimate (`central.scheduler.estimate`) for every waiting job. A PodGroup's annotation is
written only when its estimate moved by more than `SLACK` or appeared or went (a start beyond
the estimate's horizon removes it), so a steady queue costs no writes. The write is an update
of the PodGroup the watch last delivered (its resourceVersion): a conflict is left for the next
round. Nothing of this runs inside a scheduling cycle.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from central.errors import InputError
from central.framework.conf import SchedulerConf
from central.kube.client import VOLCANO_SCHEDULING, ApiError, KubeClient, path
from central.model.cache import ClusterCache
from central.model.fields import parse_time
from central.scheduler.estimate import explain

log = logging.getLogger(__name__)

ANNOTATION = "caldera.sh/estimated-start"
SLACK = 60.0  # seconds an estimate may move before it is written again


class StartEstimates:
    def __init__(self, client: KubeClient, podgroups: Mapping[str, dict[str, Any]], period: float):
        self.client, self.podgroups, self.period = client, podgroups, period
        self._last = float("-inf")
        self._running: threading.Thread | None = None
        self.writes = 0

    def due(self, monotonic: float) -> bool:
        return self.period > 0 and monotonic - self._last >= self.period and not (
            self._running is not None and self._running.is_alive())

    def start(self, cache: ClusterCache, conf: SchedulerConf, monotonic: float) -> None:
        """Called between cycles, under the cache's lock: copies the cache and estimates off it."""
        self._last = monotonic
        snapshot = copy.deepcopy(cache)
        self._running = threading.Thread(target=self._run, args=(snapshot, conf), name="start estimates", daemon=True)
        self._running.start()

    def _run(self, snapshot: ClusterCache, conf: SchedulerConf) -> None:
        try:
            now = datetime.now(timezone.utc)
            estimates = explain(snapshot, conf, now, copied=True)
            for uid, e in estimates.items():
                self._write(uid, e.estimated_start)
            for uid, obj in list(self.podgroups.items()):  # started (or gone from the line): the mark goes
                if uid not in estimates and ANNOTATION in (obj["metadata"].get("annotations") or {}):
                    self._write(uid, None)
        except Exception:  # an estimate never stops scheduling
            log.exception("start estimates failed")

    def _write(self, uid: str, start: datetime | None) -> None:
        obj = self.podgroups.get(uid)
        if obj is None:
            return
        annotations = dict(obj["metadata"].get("annotations") or {})
        if not changed(annotations.get(ANNOTATION), start):
            return
        if start is None:
            annotations.pop(ANNOTATION, None)
        else:
            annotations[ANNOTATION] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
        namespace, name = uid.split("/", 1)
        try:
            self.client.request("PUT", path(VOLCANO_SCHEDULING, "podgroups", namespace, name),
                                body={**obj, "metadata": {**obj["metadata"], "annotations": annotations}})
            self.writes += 1
        except ApiError as err:  # a conflict or a PodGroup gone: the next round writes what is current
            log.debug("estimated start of %s not written: %s", uid, err)


def changed(written: str | None, start: datetime | None) -> bool:
    """Whether the annotation `written` should become `start`."""
    if written is None or start is None:
        return (written is None) != (start is None)
    try:
        before = parse_time(written, ANNOTATION)
    except InputError:  # someone else's text there: ours replaces it
        return True
    return abs((before - start).total_seconds()) > SLACK
