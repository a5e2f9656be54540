"""Queue admission by scheduling gate on the real control plane, as Volcano's schedulinggates
e2e specs: the webhook gives an opted-in pod the queue-allocation gate at creation, and the
scheduler removes it once the pod's queue has room; the API server binds no gated pod."""

from __future__ import annotations

import time
from typing import Any

import pytest

from central.kube.client import ApiError
from central.model.schedulinggate import QUEUE_ALLOCATION_GATE
from tests.e2e.conftest import Tenant, wait_for

pytestmark = pytest.mark.e2e

SLOT = {"cpu": "500m", "memory": "512Mi"}


def _queue_and_group(tenant: Tenant, name: str) -> None:
    """A queue whose capability is one slot, and an open PodGroup in it (Volcano's spec)."""
    tenant.create("/apis/scheduling.volcano.sh/v1beta1/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
        "spec": {"weight": 1, "capability": SLOT}})
    wait_for(lambda: (tenant.kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{name}").get("status") or {})
             .get("state") == "Open", f"queue {name} open")
    tenant.create(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{tenant.namespace}/podgroups", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": tenant.namespace},
        "spec": {"minMember": 1, "queue": name, "minResources": SLOT}})


def _gated_pod(tenant: Tenant, name: str, group: str) -> dict[str, Any]:
    return tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": {
            "scheduling.k8s.io/group-name": group, QUEUE_ALLOCATION_GATE: "true",
            "scheduling.volcano.sh/queue-name": group}},
        "spec": {"schedulerName": "volcano", "restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "busybox", "resources": {"requests": SLOT}}]}})


def _pod(tenant: Tenant, name: str) -> dict[str, Any] | None:
    return tenant.kube.get_or_none(f"/api/v1/namespaces/{tenant.namespace}/pods/{name}")


def _gates(pod: dict[str, Any] | None) -> list[str]:
    return [g["name"] for g in ((pod or {}).get("spec") or {}).get("schedulingGates") or []]


def _ungated_and_running(tenant: Tenant, name: str) -> bool:
    pod = _pod(tenant, name)
    return pod is not None and not _gates(pod) and (pod.get("status") or {}).get("phase") == "Running"


def _cleanup(tenant: Tenant, queue: str, pods: list[str]) -> None:
    """The pods, the PodGroup, then the queue (refused while it still holds a PodGroup)."""
    for pod in pods:
        if _pod(tenant, pod) is not None:
            tenant.kube.delete(f"/api/v1/namespaces/{tenant.namespace}/pods/{pod}")
    wait_for(lambda: all(_pod(tenant, p) is None for p in pods), "the pods gone", timeout=60)
    tenant.kube.delete(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{tenant.namespace}/podgroups/{queue}")

    def queue_deleted() -> bool:
        try:
            tenant.kube.delete(f"/apis/scheduling.volcano.sh/v1beta1/queues/{queue}")
            return True
        except ApiError as err:
            return err.code == 404
    wait_for(queue_deleted, f"queue {queue} deleted", timeout=60)


def test_a_gated_pod_in_a_queue_with_room_loses_its_gate_and_runs(tenant: Tenant) -> None:
    queue = f"{tenant.namespace}-room"[:63]
    _queue_and_group(tenant, queue)
    try:
        created = _gated_pod(tenant, "pod-1", queue)
        assert _gates(created) == [QUEUE_ALLOCATION_GATE], "the webhook must inject the gate at creation"
        wait_for(lambda: _ungated_and_running(tenant, "pod-1"), "pod-1 ungated and running", timeout=120)
    finally:
        _cleanup(tenant, queue, ["pod-1"])


def test_a_gated_pod_in_a_full_queue_stays_gated_until_room_appears(tenant: Tenant) -> None:
    queue = f"{tenant.namespace}-full"[:63]
    _queue_and_group(tenant, queue)
    try:
        _gated_pod(tenant, "holder", queue)
        wait_for(lambda: _ungated_and_running(tenant, "holder"), "holder ungated and running", timeout=120)
        _gated_pod(tenant, "waiter", queue)  # the queue's one slot is taken
        until = time.monotonic() + 10
        while time.monotonic() < until:  # many scheduling cycles: the gate stays and nothing binds it
            pod = _pod(tenant, "waiter")
            assert pod is not None and _gates(pod) == [QUEUE_ALLOCATION_GATE] and not pod["spec"].get("nodeName")
            time.sleep(1)
        tenant.kube.delete(f"/api/v1/namespaces/{tenant.namespace}/pods/holder")
        wait_for(lambda: _ungated_and_running(tenant, "waiter"), "waiter ungated and running once holder left",
                 timeout=120)
    finally:
        _cleanup(tenant, queue, ["holder", "waiter"])
