"""On the real control plane: a gang as big as the cluster's free room starves behind a
stream of small jobs under Volcano's default configuration; with the reservation plugin
turned on (the scheduler re-reads its mounted configuration), it gets a `Reserved` PodGroup
condition and Event, visible through the API, and starts while small jobs keep arriving."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from central.localcluster.up import SCHEDULER_CONFIGMAP
from tests.e2e.conftest import SCHEDULER_CONF, Tenant, volcano_job, wait_for

RESERVING_CONF = SCHEDULER_CONF.replace("""- plugins:
  - name: priority""", """- plugins:
  - name: reservation
    arguments: {reservation.waitThreshold: 10s, reservation.defaultRuntime: 30s}
  - name: priority""", 1)


def scheduler_conf_files(tenant: Tenant) -> list[Path]:
    """The scheduler pods' mounted copies of the configuration (what a kubelet refreshes)."""
    return sorted(tenant.cluster.dir.glob(f"pods/*/config/{SCHEDULER_CONFIGMAP[1]}"))


def set_scheduler_conf(tenant: Tenant, text: str) -> None:
    for path in scheduler_conf_files(tenant):
        path.write_text(text)


def reserved(tenant: Tenant, job: str) -> dict | None:
    podgroup = tenant.job_podgroup(job) or {}
    return next((c for c in (podgroup.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Reserved" and c.get("status") == "True"), None)


def test_a_starving_gang_gets_its_reservation_and_starts_while_small_jobs_keep_coming(tenant: Tenant):
    files = scheduler_conf_files(tenant)
    assert files, "no scheduler configuration mounted under the cluster's pods/"
    stop = threading.Event()
    submitted = [0]

    def stream() -> None:  # a 1-CPU, 20-second job every second, on every node in turn
        while not stop.is_set():
            name = f"small-{submitted[0]:03d}"
            tenant.submit(volcano_job(name, tenant.queue, replicas=1, duration="20s", cpu="1",
                                      extra_spec={"runningEstimate": "20s"}))
            submitted[0] += 1
            stop.wait(1.0)

    set_scheduler_conf(tenant, RESERVING_CONF)
    feeder = threading.Thread(target=stream, daemon=True)
    try:
        feeder.start()
        wait_for(lambda: submitted[0] >= 10, "the small jobs to start coming")
        # three 14-CPU pods: all three 16-CPU nodes, never free together while small jobs run
        tenant.submit(volcano_job("gang", tenant.queue, replicas=3, cpu="14",
                                  duration="10s", extra_spec={"runningEstimate": "10s"}))
        condition = wait_for(lambda: reserved(tenant, "gang"), "the gang's Reserved condition", timeout=90)
        assert "nodes " in condition["message"]
        # the recorder writes Events from its own thread, after the cycle's status writes
        podgroup = tenant.job_podgroup("gang")["metadata"]["name"]
        wait_for(lambda: any(e["reason"] == "Reserved" for e in tenant.events("PodGroup", podgroup)),
                 "the gang's Reserved Event", timeout=30)
        during = submitted[0]
        wait_for(lambda: tenant.phase("gang") in ("Running", "Completed"), "the gang to start", timeout=120)
        assert submitted[0] > during  # small jobs kept coming meanwhile
        wait_for(lambda: any(c.get("type") == "Reserved" and c.get("status") == "False"
                             for c in (tenant.job_podgroup("gang") or {}).get("status", {}).get("conditions") or []),
                 "the reservation to be released once the gang started")
    finally:
        stop.set()
        feeder.join(timeout=10)
        set_scheduler_conf(tenant, SCHEDULER_CONF)
        time.sleep(2)  # a scheduling period: the suite's configuration is back before the next test
