"""On the real control plane: a low-priority gang holds every node at exactly its
minAvailable, so preempt (with gang voting) can take none of its pods and the
higher-priority job would wait for ever. With `gangpreempt` in
place of `preempt` (the scheduler re-reads its mounted configuration), a higher-priority job
evicts the gang whole, through the Eviction API, and starts; no pod of the old gang keeps
running below its minAvailable."""

from __future__ import annotations

import time

from central.kube.client import ApiError
from central.localcluster.up import SCHEDULER_CONFIGMAP
from tests.e2e.conftest import SCHEDULER_CONF, Tenant, volcano_job, wait_for

GANG_CONF = SCHEDULER_CONF.replace('actions: "enqueue, allocate, preempt, backfill"',
                                   'actions: "enqueue, allocate, gangpreempt, backfill"', 1)
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def set_scheduler_conf(tenant: Tenant, text: str) -> None:
    files = sorted(tenant.cluster.dir.glob(f"pods/*/config/{SCHEDULER_CONFIGMAP[1]}"))
    assert files, "no scheduler configuration mounted under the cluster's pods/"
    for path in files:
        path.write_text(text)


def running(tenant: Tenant, job: str) -> list[dict]:
    return [p for p in tenant.pods(f"volcano.sh/job-name={job}")
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def test_a_gang_at_min_available_is_evicted_whole_for_a_higher_priority_job(tenant: Tenant) -> None:
    assert GANG_CONF != SCHEDULER_CONF
    high = f"{tenant.namespace}-high"[:63]
    tenant.kube.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                          "metadata": {"name": high}, "value": 1000})
    set_scheduler_conf(tenant, GANG_CONF)
    try:
        # three 10-CPU pods at minAvailable 3, one on each 16-CPU node: no node has the 14 CPUs
        # high asks for, and the queue has room for both, so enqueue admits high
        tenant.submit(volcano_job("low", tenant.queue, replicas=3, cpu="10", duration="1h"))
        first = wait_for(lambda: (lambda pods: pods if len(pods) == 3 else None)(running(tenant, "low")),
                         "the low gang to run on all three nodes", timeout=90)
        old = {p["metadata"]["uid"] for p in first}
        tenant.submit(volcano_job("high", tenant.queue, replicas=1, cpu="14", duration="1h",
                                  extra_spec={"priorityClassName": high}))
        pod = wait_for(lambda: next(iter(running(tenant, "high")), None), "the high job to run", timeout=120)
        assert pod["spec"].get("nodeName")
        # the old gang went whole: none of its pods is left running below minAvailable
        left = {p["metadata"]["uid"] for p in running(tenant, "low")}
        assert not (left & old), "a pod of the evicted gang kept running"
        assert len(running(tenant, "low")) in (0, 3)
    finally:
        set_scheduler_conf(tenant, SCHEDULER_CONF)
        try:
            tenant.kube.delete(f"{PRIORITY_CLASSES}/{high}")
        except ApiError:
            pass
        time.sleep(2)  # a scheduling period: the suite's configuration is back before the next test


