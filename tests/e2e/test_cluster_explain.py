"""`caldera explain job` and the scheduler's estimated-start annotation on the real control
plane: a job waiting behind running pods with a declared runtime gets its place, reason and
start; one that can never fit says so."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from central.scheduler.startestimates import ANNOTATION, StartEstimates
from central.vcctl.explain import live_cache, scheduler_conf
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e


def test_explain_a_waiting_job_and_annotate_its_estimated_start(tenant: Tenant) -> None:
    # one 12-cpu pod on each 16-cpu node, declared to run 10 minutes: an 8-cpu job waits for them
    tenant.submit(volcano_job("wide", tenant.queue, replicas=3, cpu="12", duration="10m",
                              annotations={"caldera.sh/running-estimate": "10m"}))
    wait_for(lambda: sum(1 for p in tenant.pods() if p["status"].get("phase") == "Running") == 3, "wide running",
             timeout=90)
    tenant.submit(volcano_job("next", tenant.queue, replicas=1, cpu="8"))
    tenant.submit(volcano_job("huge", tenant.queue, replicas=1, cpu="100"))
    wait_for(lambda: tenant.job_podgroup("next") and tenant.job_podgroup("huge"), "the waiting jobs' PodGroups")
    # once admitted, next waits with its pod made (the Job controller makes it after admission)
    wait_for(lambda: any(p["metadata"]["name"].startswith("next-") for p in tenant.pods("volcano.sh/job-name=next")),
             "next's pod")

    done = tenant.caldera("explain", "job", "next", "-n", tenant.namespace, "-o", "json")
    assert done.returncode == 0, done.stderr
    nxt = json.loads(done.stdout)
    assert nxt["queue"] == tenant.queue and nxt["position"] is not None and not nxt["started"]
    start = datetime.strptime(nxt["estimatedStart"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert timedelta(minutes=7) < start - datetime.now(timezone.utc) < timedelta(minutes=11), nxt
    assert nxt["unblock"].startswith("running pods ending")

    huge = tenant.caldera("explain", "job", "huge", "-n", tenant.namespace)
    assert huge.returncode == 0, huge.stderr
    assert "Unblocked by: can never fit: its minResources cpu 100 exceed the cluster's allocatable" in huge.stdout
    missing = tenant.caldera("explain", "job", "nope", "-n", tenant.namespace)
    assert missing.returncode == 2 and "no such Volcano Job or PodGroup" in missing.stderr and "Traceback" not in missing.stderr

    # the scheduler's writer, on the live objects: the waiting job's PodGroup gets the annotation
    kube = tenant.kube
    podgroups = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
                 for o in kube.get("/apis/scheduling.volcano.sh/v1beta1/podgroups")["items"]}
    writer = StartEstimates(kube, podgroups, period=1.0)
    writer.start(live_cache(kube), scheduler_conf(kube, "caldera-system"), 0.0)
    assert writer._running is not None
    writer._running.join(60)
    written = (tenant.job_podgroup("next") or {})["metadata"].get("annotations", {}).get(ANNOTATION)
    assert written is not None and abs(
        (datetime.strptime(written, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) - start).total_seconds()) < 120
    assert ANNOTATION not in ((tenant.job_podgroup("huge") or {})["metadata"].get("annotations") or {})
