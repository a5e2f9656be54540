"""Leader failover of the scheduler on the real apiserver: a standby replica takes over when
the leader is killed or frozen, every pod is bound exactly once, and a frozen leader, thawed,
steps down without exiting."""

from __future__ import annotations

import os
import signal
import time
import urllib.request

import pytest

from central.localcluster.processes import alive
from tests.e2e.bindwatch import BindWatch
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

LEASE = "/apis/coordination.k8s.io/v1/namespaces/caldera-system/leases/vc-scheduler"


def holder(tenant: Tenant) -> str:
    return (tenant.kube.get(LEASE).get("spec") or {}).get("holderIdentity", "")


def leader_gauge(port: int) -> float | None:
    """caldera_scheduler_leader of the replica serving /metrics on `port` (None: no answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith("caldera_scheduler_leader ")),
                None)


def all_bound(tenant: Tenant, count: int) -> bool:
    pods = tenant.pods()
    return len(pods) == count and all(p["spec"].get("nodeName") for p in pods)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_standby_takes_over_and_no_pod_is_bound_twice(tenant: Tenant, how: str) -> None:
    cluster = tenant.cluster
    standby = cluster.start("caldera-scheduler", process_name="caldera-scheduler-standby")
    leader = cluster.process("caldera-scheduler")
    watch = BindWatch(tenant)
    second_holder = ""
    try:
        tenant.submit(volcano_job("before", tenant.queue, replicas=3))
        wait_for(lambda: all_bound(tenant, 3), "the leader binds the first job")
        first_holder = holder(tenant)
        os.kill(leader.pid, getattr(signal, how))
        tenant.submit(volcano_job("after", tenant.queue, replicas=3))
        # Lease 15 s, so the standby leads within about 15 s + a retry period.
        wait_for(lambda: holder(tenant) not in ("", first_holder), "the standby to take the lease", timeout=45)
        second_holder = holder(tenant)
        wait_for(lambda: all_bound(tenant, 6), "the new leader binds the second job", timeout=45)
        if how == "SIGSTOP":
            os.kill(leader.pid, signal.SIGCONT)
            # Its renew deadline has long passed: it must step down, not schedule from a stale
            # cache, and stand again as a candidate without exiting.
            port = cluster.ports["caldera-scheduler:--listen-port"]
            wait_for(lambda: leader_gauge(port) == 0.0, "the thawed leader to step down", timeout=30)
            assert alive(leader.pid) and holder(tenant) == second_holder
        time.sleep(2)  # any late bind would show in the watch now
        assert all(len(nodes) == 1 for nodes in watch.seen.values()), watch.seen
        assert len(watch.seen) == 6
        assert alive(standby.pid)
    finally:
        watch.close()
        # Leave one scheduler, under the name and ports the agents and other tests know.
        cluster.sup.stop("caldera-scheduler", signal.SIGKILL)
        cluster.sup.stop("caldera-scheduler-standby")  # SIGTERM: it releases the lease
        cluster.start("caldera-scheduler")
        wait_for(lambda: holder(tenant) not in ("", second_holder), "the restarted scheduler to lead")
