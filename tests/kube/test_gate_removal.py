"""The scheduler's gate removal workers against a real kube-apiserver: the strategic merge
patch takes the queue-allocation gate off and leaves any other gate."""

from __future__ import annotations

import threading
from typing import Any

from central.model.schedulinggate import QUEUE_ALLOCATION_GATE
from central.scheduler.gateremoval import PER_WORKER_BUFFER, GateRemover
from tests.builders import pod
from tests.waiting import eventually


def _gates(obj: dict[str, Any] | None) -> list[str]:
    return [g["name"] for g in ((obj or {}).get("spec") or {}).get("schedulingGates") or []]


def test_the_queue_gate_is_removed_and_other_gates_stay(real):
    for name, gates in (("only", [QUEUE_ALLOCATION_GATE]), ("both", [QUEUE_ALLOCATION_GATE, "example.com/other"])):
        real.put(pod(name, schedulingGates=[{"name": g} for g in gates]))
    remover = GateRemover(real.kube, workers=2)
    try:
        assert remover.enqueue(f"{real.namespace}/only") and remover.enqueue(f"{real.namespace}/both")
        assert remover.enqueue(f"{real.namespace}/gone")  # a pod deleted meanwhile: a log line, no more
        eventually(lambda: not _gates(real.pod("only")) and _gates(real.pod("both")) == ["example.com/other"],
                   timeout=10, what="the queue gate removed from both pods")
    finally:
        remover.close()


class _BlockedClient:
    """A client whose every call waits until released: the workers stay busy."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.release.wait(10)
        return {}


def test_a_full_line_drops_the_removal_as_volcano_does():
    client = _BlockedClient()
    remover = GateRemover(client, workers=0)  # type: ignore[arg-type]  # below 1: Volcano's default of 5 workers
    try:
        assert remover.workers == 5
        accepted = [remover.enqueue(f"ns/p-{i}") for i in range(5 * PER_WORKER_BUFFER + 5 + 10)]
        assert not all(accepted) and accepted.count(True) <= 5 * PER_WORKER_BUFFER + 5  # buffer + one per busy worker
    finally:
        client.release.set()
        remover.close()
