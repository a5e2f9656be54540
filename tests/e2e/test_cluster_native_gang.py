"""Kubernetes' own gang API on the real control plane (`caldera up --native-gang-api`: the API
server serves scheduling.k8s.io/v1beta1 PodGroup, the scheduler runs with --native-podgroups):
plain pods that name a native PodGroup are bound all or nothing by Caldera, with no Volcano
object, and the PodGroupInitiallyScheduled condition Caldera writes is the one kube-scheduler
writes, as the API server's own Go types hold it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.e2e.conftest import Tenant, wait_for

pytestmark = pytest.mark.e2e

NATIVE = "/apis/scheduling.k8s.io/v1beta1"


def _native_gang(tenant: Tenant, name: str, size: int, cpu: str, min_count: int | None = None) -> list[str]:
    """A native PodGroup of `min_count` (default: all) in the tenant's queue, and `size` plain
    pods of Caldera's scheduler that name it."""
    tenant.create(f"{NATIVE}/namespaces/{tenant.namespace}/podgroups", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "annotations": {"scheduling.volcano.sh/queue-name": tenant.queue}},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size if min_count is None else min_count}}}})
    names = [f"{name}-{i}" for i in range(size)]
    for pod in names:
        tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
            "spec": {"schedulerName": "volcano", "schedulingGroup": {"podGroupName": name},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}})
    return names


def _podgroup(tenant: Tenant, name: str) -> dict[str, Any]:
    return tenant.kube.get(f"{NATIVE}/namespaces/{tenant.namespace}/podgroups/{name}")


def _initially_scheduled(tenant: Tenant, name: str) -> dict[str, Any] | None:
    conditions = (_podgroup(tenant, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodGroupInitiallyScheduled"), None)


def _node(tenant: Tenant, pod: str) -> str | None:
    return tenant.kube.get(f"/api/v1/namespaces/{tenant.namespace}/pods/{pod}")["spec"].get("nodeName")


def test_a_native_gang_that_fits_is_bound_whole_and_marked_initially_scheduled(tenant: Tenant) -> None:
    pods = _native_gang(tenant, "fits", 3, "1")
    assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "fits"} for p in tenant.pods())  # served: kept
    wait_for(lambda: all(_node(tenant, p) for p in pods), "the native gang bound", timeout=90)
    condition = wait_for(lambda: (c := _initially_scheduled(tenant, "fits")) and c["status"] == "True" and c,
                         "PodGroupInitiallyScheduled=True", timeout=60)
    # metav1.Condition's fields, as the API server's Go types decoded and stored them; the API
    # server keeps no generation for a PodGroup in 1.37, so observedGeneration is 0 and omitted,
    # as kube-scheduler's is
    generation = _podgroup(tenant, "fits")["metadata"].get("generation")
    assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime",
                              *(["observedGeneration"] if generation else [])}
    assert condition["reason"] == "Scheduled"
    assert condition.get("observedGeneration") == generation
    datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))
    assert tenant.podgroup("fits") is None  # no Volcano PodGroup was made for it
    assert all(not (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
               for p in tenant.pods())  # the pods are left as they were written


def test_a_native_gang_that_does_not_fit_stays_wholly_pending_with_a_reason(tenant: Tenant) -> None:
    # four pods of 10 CPUs on three nodes of 16: three would fit, the gang of four does not
    pods = _native_gang(tenant, "big", 4, "10")
    condition = wait_for(lambda: _initially_scheduled(tenant, "big"), "PodGroupInitiallyScheduled", timeout=90)
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert "tasks in gang unschedulable" in condition["message"]
    assert condition.get("observedGeneration") == _podgroup(tenant, "big")["metadata"].get("generation")

    def pending_with_reason() -> bool:
        conditions = [next((c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"),
                           None) for p in tenant.pods()]
        return all(c is not None and c["status"] == "False" and c["reason"] == "Unschedulable" for c in conditions)
    wait_for(pending_with_reason, "every pod PodScheduled=False, Unschedulable", timeout=60)
    assert [p for p in pods if _node(tenant, p)] == []
