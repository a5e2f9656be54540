"""Removing the queue-allocation scheduling gate from pods whose queue admitted them, off the
scheduling cycle (Volcano's SchGateManager).

A fixed number of worker threads (`--gate-removal-worker-num`, default 5) take pods from a
bounded line (200 per worker). A full line drops the removal with a warning, as Volcano's
does: the pod keeps its gate and a later cycle, finding its queue still has room, asks again.
Each removal is one strategic merge patch that deletes the gate by name, so other gates and
a concurrent writer's changes stay; a pod already ungated or gone is not an error worth more
than a log line.
"""

from __future__ import annotations

import logging
import queue
import threading

from central.kube.client import CORE, ApiError, KubeClient, path
from central.model.schedulinggate import QUEUE_ALLOCATION_GATE

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5
PER_WORKER_BUFFER = 200
STRATEGIC = "application/strategic-merge-patch+json"
REMOVE_GATE = {"spec": {"schedulingGates": [{"name": QUEUE_ALLOCATION_GATE, "$patch": "delete"}]}}


class GateRemover:
    def __init__(self, client: KubeClient, workers: int = DEFAULT_WORKERS):
        self.client = client
        self.workers = workers if workers >= 1 else DEFAULT_WORKERS  # Volcano's rule for a value below 1
        self._line: queue.Queue[str | None] = queue.Queue(self.workers * PER_WORKER_BUFFER)
        self._threads = [threading.Thread(target=self._run, daemon=True, name=f"gate-removal-{i}")
                         for i in range(self.workers)]
        self.removed = 0
        for thread in self._threads:
            thread.start()

    def enqueue(self, pod_key: str) -> bool:
        """Queue the removal; False when the line is full (dropped, as Volcano)."""
        try:
            self._line.put_nowait(pod_key)
            return True
        except queue.Full:
            log.warning("gate removal line full, skipping gate removal for %s", pod_key)
            return False

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers once the removals already queued are done (or `timeout` passed)."""
        for _ in self._threads:
            try:
                self._line.put(None, timeout=timeout)
            except queue.Full:
                break
        for thread in self._threads:
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            pod_key = self._line.get()
            if pod_key is None:
                return
            namespace, name = pod_key.split("/", 1)
            try:
                self.client.request("PATCH", path(CORE, "pods", namespace, name), body=REMOVE_GATE,
                                    content_type=STRATEGIC)
                self.removed += 1
                log.info("removed the queue-allocation gate from pod %s", pod_key)
            except ApiError as err:
                log.error("failed to remove the queue-allocation gate from %s: %s", pod_key, err)
