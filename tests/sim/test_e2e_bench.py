"""`caldera bench --e2e` on a small cluster: correctness only (figures are printed by the
bench, never asserted): every pod bound exactly once by each scheduler, and each scheduler's
binds found in its API server's audit log under its own client."""

from __future__ import annotations

import pytest

from central.bench import e2e, e2e_volcano
from central.localcluster import build

pytestmark = pytest.mark.e2e

PROCESS = {"caldera": "caldera-scheduler", "kube-scheduler": "kube-scheduler"}  # the scheduler's process


def test_every_pod_bound_once_by_each_scheduler():
    why = build.unavailable([*build.CONTROL_PLANE, "kube-scheduler"])
    if why:
        pytest.skip(f"no real control plane here: {why}")
    results = e2e.run_size(20, 200, say=lambda line: None, timeout=300)
    assert [r.scheduler for r in results] == ["caldera", "kube-scheduler"]
    for row in results:
        assert row.failed_creates == []
        assert row.rebound == []
        assert row.bound == row.pods == 200, row.scheduler
        assert _binds(row) == 200, row.scheduler  # the audit log names the scheduler's client
        # the CPU of the API server and of the scheduler's own process, over the clock
        assert row.cpu["kube-apiserver"] > 0 and row.cpu[PROCESS[row.scheduler]] > 0, row.cpu
        assert "kube-apiserver" in e2e.report(row)
    line = e2e.final_line(20, 200, results)
    assert line.startswith("e2e 20 nodes / 200 pods, mixed: caldera ") and ", kube-scheduler " in line


def _binds(row: e2e.Result) -> int:
    return next(iter(row.requests.by_client.values()))["create pods/binding"]


def test_volcano_and_caldera_bind_every_gang_of_a_volcano_case():
    why = build.unavailable([*build.CONTROL_PLANE, "kube-scheduler"]) or e2e_volcano.unavailable()
    if why:
        pytest.skip(f"no real control plane or no cached Volcano here: {why}")
    results = e2e.run_size(4, 44, say=lambda line: None, timeout=300, schedulers=("caldera", "volcano"),
                           case="gang-comprehensive")
    assert [r.scheduler for r in results] == ["caldera", "volcano"]
    for row in results:
        assert row.failed_creates == [] and row.rebound == []
        assert row.bound == row.pods == 44, row.scheduler  # 4 jobs of a master and 10 workers
        assert _binds(row) == 44, row.scheduler
        assert row.requests.binds_per_s > 0


def test_workload_is_the_session_benchmarks_cluster():
    work = e2e.workload(10, 100)
    assert len(work.nodes) == 10 and len(work.pods) == 100
    groups = {pg["metadata"]["name"]: pg["spec"]["minMember"] for pg in work.podgroups}
    members = {}
    for pod in work.pods:
        group = pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        members[group] = members.get(group, 0) + 1
        assert "status" not in pod and pod["apiVersion"] == "v1"
    assert members == groups and len(set(groups.values())) > 1  # gangs of mixed sizes


def test_volcano_backlog_binds_pods_created_before_its_scheduler_started():
    why = build.unavailable([*build.CONTROL_PLANE, "kube-scheduler"]) or e2e_volcano.unavailable()
    if why:
        pytest.skip(f"no real control plane or no cached Volcano here: {why}")
    [row] = e2e.run_size(4, 20, say=lambda line: None, timeout=300, schedulers=("volcano",), backlog=True, case="pod")
    assert row.backlog and row.failed_creates == [] and row.rebound == []
    assert row.bound == row.pods == 20 and _binds(row) == 20
