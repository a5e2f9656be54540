"""What a person reads about a Job on the real control plane: `caldera job view` ends with the
Job's Events as vcctl prints them, and `kubectl get vcjob` / `kubectl get pg` get Volcano's
printer columns, filled from the live objects (the API server's Table output, which kubectl
prints)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from central.kube.client import KubeClient
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"  # what kubectl asks for


def table(kube: KubeClient, url: str) -> dict[str, Any]:
    """The API server's Table for `url`, as `kubectl get` requests it."""
    _, full_url, headers, _, _ = kube.api.param_serialize("GET", url, header_params={"Accept": TABLE},
                                                          auth_settings=["BearerToken"])
    response = kube.api.call_api("GET", full_url, header_params=headers)
    body = response.read()
    assert response.status == 200, body
    printed: dict[str, Any] = json.loads(body)
    return printed


def columns(printed: dict[str, Any]) -> list[tuple[str, int]]:
    return [(c["name"], c.get("priority", 0)) for c in printed["columnDefinitions"]]


def test_job_view_ends_with_the_jobs_events(tenant: Tenant) -> None:
    tenant.submit(volcano_job("viewed", tenant.queue, replicas=1, duration="1s"))
    wait_for(lambda: tenant.phase("viewed") == "Completed", "the job Completed")
    events = wait_for(lambda: (lambda found: found if any("-> Completed" in e["message"] for e in found) else None)(
        tenant.events("Job", "viewed")), "the Job's Completed Event")

    shown = tenant.caldera("job", "view", "-N", "viewed", "-n", tenant.namespace)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:2] == ["Name:       \tviewed", f"Namespace:  \t{tenant.namespace}"]
    assert "  State:\n    Phase:\tCompleted\n" in shown.stdout
    start = lines.index("Events:")
    assert [cell.rstrip() for cell in lines[start + 1].split("\t")] == ["Type", "Reason", "Age", "Form", "Message"]
    assert [cell.rstrip() for cell in lines[start + 2].split("\t")] == ["-------"] * 5
    rows = [[cell.rstrip() for cell in line.split("\t")] for line in lines[start + 3:]]
    assert {(kind, reason, message) for kind, reason, _, _, message in rows} == {
        (e["type"], e["reason"], e["message"].strip()) for e in tenant.events("Job", "viewed")} >= {
        (e["type"], e["reason"], e["message"].strip()) for e in events}
    assert {source for _, _, _, source, _ in rows} == {"vc-controller-manager"}
    ages = [age for _, _, age, _, _ in rows]  # `12s`, or `3s (x2 over 12s)` for a repeated Event
    assert all(re.fullmatch(r"\d+[smh]\w*( \(x\d+ over \d+[smh]\w*\))?", age) for age in ages), ages


def test_kubectl_get_prints_volcanos_columns_from_the_live_objects(tenant: Tenant) -> None:
    tenant.submit(volcano_job("listed", tenant.queue, replicas=2))
    wait_for(lambda: (tenant.job("listed").get("status") or {}).get("running") == 2, "the job's two pods running")
    podgroup = wait_for(lambda: (lambda pg: pg if pg and (pg.get("status") or {}).get("running") == 2 else None)(
        tenant.job_podgroup("listed")), "its PodGroup counting them")

    jobs = table(tenant.kube, f"{tenant.jobs}/listed")
    assert columns(jobs) == [("Name", 0), ("STATUS", 0), ("minAvailable", 0), ("RUNNINGS", 0), ("AGE", 0),
                             ("QUEUE", 1)]
    [row] = jobs["rows"]
    assert row["cells"][:4] == ["listed", "Running", 2, 2] and row["cells"][5] == tenant.queue

    podgroups = table(tenant.kube, f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{tenant.namespace}/podgroups/"
                                   f"{podgroup['metadata']['name']}")
    assert columns(podgroups) == [("Name", 0), ("STATUS", 0), ("minMember", 0), ("RUNNINGS", 0), ("AGE", 0),
                                  ("QUEUE", 1)]
    [row] = podgroups["rows"]
    assert row["cells"][1:4] == ["Running", 2, 2] and row["cells"][5] == tenant.queue

    queues = table(tenant.kube, f"/apis/scheduling.volcano.sh/v1beta1/queues/{tenant.queue}")
    assert columns(queues) == [("Name", 0), ("PARENT", 0)]
