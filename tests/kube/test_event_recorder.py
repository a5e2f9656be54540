"""The recorder's worker: what is queued at close is written, and the thread ends."""

from __future__ import annotations

import threading
from typing import Any

from central.kube.events import EventRecorder


class SlowApi:
    """Records the Events created; each create waits for `go` (a slow API server)."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.go = threading.Event()

    def create(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        self.go.wait(5)
        self.created.append(body)
        return body


def test_close_writes_what_is_queued_then_ends_the_worker() -> None:
    api = SlowApi()
    recorder = EventRecorder(api, "vc-scheduler")  # type: ignore[arg-type]
    for i in range(3):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns", "uid": str(i)}}
        recorder.emit(pod, "Normal", "Scheduled", f"assigned p{i}")
    api.go.set()
    recorder.close()
    assert [e["involvedObject"]["name"] for e in api.created] == ["p0", "p1", "p2"]
    assert not recorder._thread.is_alive()
