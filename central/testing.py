"""Fakes for tests of code that uses the scheduler core (as httpx ships MockTransport)."""

from __future__ import annotations

from typing import Any

from central.model.dra import DeviceClaimWrite
from central.model.volumes import ClaimBinding


class RecordingSink:
    """A ClusterSink that records every call, in order, as (method, key, value)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def annotate(self, pod_key: str, annotations: dict[str, str]) -> None:
        self.calls.append(("annotate", pod_key, dict(annotations)))

    def bind_claims(self, pod_key: str, bindings: tuple[ClaimBinding, ...]) -> None:
        self.calls.append(("bind_claims", pod_key, bindings))

    def reserve_device_claims(self, pod_key: str, writes: tuple[DeviceClaimWrite, ...]) -> None:
        self.calls.append(("reserve_device_claims", pod_key, writes))

    def bind(self, pod_key: str, node: str) -> None:
        self.calls.append(("bind", pod_key, node))

    def nominate(self, pod_key: str, node: str) -> None:
        self.calls.append(("nominate", pod_key, node))

    def evict(self, pod_key: str, reason: str) -> None:
        self.calls.append(("evict", pod_key, reason))

    def remove_queue_gate(self, pod_key: str) -> None:
        self.calls.append(("remove_queue_gate", pod_key, None))

    def update_podgroup_status(self, podgroup_key: str, status: dict[str, Any]) -> None:
        self.calls.append(("podgroup", podgroup_key, status))

    def update_queue_status(self, queue_name: str, status: dict[str, Any]) -> None:
        self.calls.append(("queue", queue_name, status))

    def annotate_queue(self, queue_name: str, annotations: dict[str, str]) -> None:
        self.calls.append(("queue_annotations", queue_name, dict(annotations)))

    def publish_node_resources(self, node: str, resources: dict[str, str]) -> None:
        self.calls.append(("node_resources", node, dict(resources)))

    def of(self, method: str) -> list[tuple[str, Any]]:
        return [(key, value) for m, key, value in self.calls if m == method]
