"""`caldera simulate` on Deployments, ReplicaSets, StatefulSets and batch Jobs: their pods, as
their controllers name them, in one PodGroup per owner, as the PodGroup controller makes it."""

from __future__ import annotations

import json
from pathlib import Path

from central.cli import main
from central.sim.manifests import read_manifests
from central.sim.timed import job_table, read_workload
from central.sim.workloads import expand_workload

MANIFESTS = Path(__file__).parent / "workloads.yaml"  # a node; a Deployment, StatefulSet and Job of ours; another's


def _template(scheduler: str = "volcano") -> dict:
    return {"metadata": {"labels": {"app": "a"}},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


def test_each_kind_becomes_its_pods_and_one_podgroup():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"},
                  "spec": {"replicas": 3, "template": _template()}}
    podgroup, *pods = expand_workload(deployment, "volcano")
    owner = pods[0]["metadata"]["ownerReferences"][0]
    # the Deployment's ReplicaSet owns the pods; its UID names the PodGroup, minMember 1
    assert owner["kind"] == "ReplicaSet" and owner["name"].startswith("web-") and owner["controller"]
    assert podgroup["metadata"]["name"] == f"podgroup-{owner['uid']}" and podgroup["spec"]["minMember"] == 1
    assert len({p["metadata"]["name"] for p in pods}) == 3
    assert all(p["metadata"]["name"].startswith(owner["name"] + "-") for p in pods)
    assert all(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == podgroup["metadata"]["name"]
               for p in pods)
    assert expand_workload(deployment, "volcano") == [podgroup, *pods]  # the same names every run

    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {"name": "db", "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
                   "spec": {"replicas": 2, "template": _template()}}
    podgroup, *pods = expand_workload(statefulset, "volcano")
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1"] and podgroup["spec"]["minMember"] == 2

    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "etl"},
           "spec": {"parallelism": 4, "completions": 2, "template": _template()}}
    assert len(expand_workload(job, "volcano")) == 1 + 2  # no more pods at once than completions
    assert expand_workload({**job, "spec": {**job["spec"], "suspend": True}}, "volcano") == []
    assert expand_workload({**job, "spec": {"template": _template("default-scheduler")}}, "volcano") == []


def test_simulate_places_workload_pods(capsys):
    assert main(["simulate", "--manifests", str(MANIFESTS), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["podgroups"]) == ["apps/podgroup-apps-db", "apps/podgroup-apps-etl",
                                        "apps/podgroup-apps-web-cspxfp8f7d"]
    assert "apps/db-0" in out["binds"] and "apps/etl-klfbl" in out["binds"]
    assert read_manifests([str(MANIFESTS)]).skipped == {"Deployment": 1}  # the default scheduler's


def test_until_runs_workloads_and_details_show_each_job(capsys):
    assert read_workload([str(MANIFESTS)]).skipped == {"Deployment": 1}
    assert main(["simulate", "--manifests", str(MANIFESTS), "--until", "3h", "--details"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("Jobs (3)")
    assert lines[start + 1].split() == ["JOB", "QUEUE", "PHASE", "SUBMITTED", "STARTED", "FINISHED", "WAIT", "JCT"]
    # the StatefulSet appears at 5m and waits for the Job's two pods to finish at 10m
    assert lines[start + 4].split() == ["apps/podgroup-apps-db", "default", "Completed", "0:05:00", "0:10:00",
                                        "1:10:00", "5.0m", "65.0m"]
    assert main(["simulate", "--manifests", str(MANIFESTS), "--until", "3h"]) == 0
    assert "Jobs (" not in capsys.readouterr().out  # the table is a detail


def test_job_table_marks_what_was_not_reached():
    from central.sim.timeline import TimedResult

    result = TimedResult(time=90000, cycles=1, instants=1, events=1, wall_s=0.0, metrics={}, still_running=["ns/b"],
                         jobs={"ns/b": {"phase": "Running", "queue": "q", "submitted": 86400.0, "started": None,
                                        "finished": None}})
    assert job_table(result).splitlines()[1].split() == ["ns/b", "q", "Running", "1d", "0:00:00", "-", "-", "-", "-"]


def test_until_details_with_json_is_refused(capsys):
    assert main(["simulate", "--manifests", str(MANIFESTS), "--until", "1h", "-o", "json", "--details"]) == 2
    assert "--details: applies to table output" in capsys.readouterr().err
