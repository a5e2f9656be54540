"""The JobFlow and JobTemplate controllers' decisions, as Volcano's: Jobs from templates in
dependsOn order, the state machine, jobRetainPolicy and the status lists."""

from __future__ import annotations

from datetime import datetime, timezone

from central.controllers.jobflows import (
    CREATED_BY_JOB_FLOW,
    CREATED_BY_JOB_TEMPLATE,
    next_phase,
    reconcile_jobflow,
    template_status,
)

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
TEMPLATES = {n: {"metadata": {"name": n, "namespace": "ns"}, "spec": {"minAvailable": 1, "queue": "q"}} for n in "abc"}


def jobflow(flows, phase="", retain=None):
    spec = {"flows": flows}
    if retain:
        spec["jobRetainPolicy"] = retain
    return {"metadata": {"name": "jf", "namespace": "ns", "uid": "jf-uid"}, "spec": spec,
            "status": {"state": {"phase": phase}} if phase else {}}


def made(flow, phase):
    marks = {CREATED_BY_JOB_FLOW: "ns.jf", CREATED_BY_JOB_TEMPLATE: f"ns.{flow}"}
    return {"metadata": {"name": f"jf-{flow}", "namespace": "ns", "labels": marks, "creationTimestamp": "2026-03-01T09:00:00Z"},
            "status": {"state": {"phase": phase}, "retryCount": 1, "runningDuration": "1m30s"}}


DAG = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}, {"name": "c", "dependsOn": {"targets": ["a", "b"]}}]


def test_only_flows_without_unmet_dependencies_start():
    d = reconcile_jobflow(jobflow(DAG), TEMPLATES, [], NOW)
    assert [j["metadata"]["name"] for j in d.create] == ["jf-a"]
    job = d.create[0]
    assert job["spec"] == TEMPLATES["a"]["spec"]
    assert job["metadata"]["labels"] == {CREATED_BY_JOB_FLOW: "ns.jf", CREATED_BY_JOB_TEMPLATE: "ns.a"}
    assert job["metadata"]["annotations"] == job["metadata"]["labels"]
    assert job["metadata"]["ownerReferences"][0]["kind"] == "JobFlow" and job["metadata"]["ownerReferences"][0]["controller"]
    assert d.status["state"] == {"phase": "Pending"}


def test_a_flow_starts_when_every_target_completed():
    d = reconcile_jobflow(jobflow(DAG, "Running"), TEMPLATES, [made("a", "Running")], NOW)
    assert d.create == []
    d = reconcile_jobflow(jobflow(DAG, "Running"), TEMPLATES, [made("a", "Completed")], NOW)
    assert [j["metadata"]["name"] for j in d.create] == ["jf-b"]
    d = reconcile_jobflow(jobflow(DAG, "Running"), TEMPLATES, [made("a", "Completed"), made("b", "Completed")], NOW)
    assert [j["metadata"]["name"] for j in d.create] == ["jf-c"]


def test_status_lists_and_job_entries():
    d = reconcile_jobflow(jobflow(DAG, "Running"), TEMPLATES, [made("a", "Completed"), made("b", "Running")], NOW)
    s = d.status
    assert s["completedJobs"] == ["jf-a"] and s["runningJobs"] == ["jf-b"] and "failedJobs" not in s
    [entry] = [e for e in s["jobStatusList"] if e["name"] == "jf-a"]
    assert entry["state"] == "Completed" and entry["restartCount"] == 1
    assert entry["endTimestamp"] == "2026-03-01T09:01:30Z"
    assert entry["runningHistories"] == [{"startTimestamp": "2026-03-01T10:00:00Z", "state": "Completed"}]
    assert s["conditions"]["jf-b"]["phase"] == "Running"


def test_state_machine_as_volcano():
    assert next_phase("", {"runningJobs": ["x"]}, 2) == "Running"
    assert next_phase("Pending", {}, 2) == "Pending"
    assert next_phase("Pending", {"terminatedJobs": ["x"]}, 2) == "Failed"
    assert next_phase("Running", {"completedJobs": ["x", "y"]}, 2) == "Succeed"
    assert next_phase("Running", {"completedJobs": ["x"], "failedJobs": ["y"]}, 2) == "Failed"
    assert next_phase("Failed", {"completedJobs": ["x", "y"]}, 2) == "Failed"


def test_retain_policy_delete_removes_the_jobs_of_a_succeeded_flow():
    jobs = [made("a", "Completed"), made("b", "Completed")]
    flows = DAG[:2]
    assert reconcile_jobflow(jobflow(flows, "Running", "delete"), TEMPLATES, jobs, NOW).status["state"]["phase"] == "Succeed"
    d = reconcile_jobflow(jobflow(flows, "Succeed", "delete"), TEMPLATES, jobs, NOW)
    assert d.delete == ["jf-a", "jf-b"] and d.status is None
    assert reconcile_jobflow(jobflow(flows, "Succeed", "retain"), TEMPLATES, jobs, NOW).delete == []


def test_a_missing_template_is_reported_and_nothing_after_it_is_made():
    d = reconcile_jobflow(jobflow([{"name": "zz"}, {"name": "a"}]), TEMPLATES, [], NOW)
    # nor is the status written (Volcano's sync returns at the error): a user's update of a
    # JobFlow just created is not refused with a conflict
    assert d.missing_templates == ["zz"] and d.create == [] and d.status is None


def test_failed_flow_does_nothing_more():
    d = reconcile_jobflow(jobflow(DAG, "Failed"), TEMPLATES, [made("a", "Completed")], NOW)
    assert d.create == [] and d.status is None


def test_template_status_lists_the_jobs_made_from_it():
    template = TEMPLATES["a"]
    assert template_status(template, []) is None
    assert template_status(template, [made("a", "Running"), made("b", "Running")]) == {"jobDependsOnList": ["jf-a"]}
