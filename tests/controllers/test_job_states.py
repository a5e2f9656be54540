"""The job state machine, step by step, for every action and policy path."""

from __future__ import annotations

from typing import Any

import pytest

from central.controllers.bus import command
from central.controllers.job_policies import OUT_OF_SYNC
from central.controllers.job_volumes import missing_claims
from central.controllers.jobs import event_type, reconcile
from tests.builders import job, task
from tests.controllers.fakeloop import FakeCluster

PS, W0, W1 = "train-ps-0", "train-worker-0", "train-worker-1"
PODGROUP = "train-uid-1"  # Volcano's `<job>-<job uid>`


def cluster(graceful: bool = False, tasks: list[dict[str, Any]] | None = None, **spec: Any) -> FakeCluster:
    return FakeCluster(job(tasks=tasks, **spec), graceful=graceful)


def test_pods_wait_for_the_podgroup_to_be_inqueue() -> None:
    c = cluster()
    d = c.step()
    assert d.create_podgroup is not None and d.create_pods == []
    assert d.create_podgroup["spec"]["minMember"] == 3 and d.create_podgroup["metadata"]["name"] == PODGROUP
    assert c.phase == "Pending"
    assert c.step().create_pods == []  # PodGroup still Pending
    c.enqueue()
    d = c.step()
    assert sorted(p["metadata"]["name"] for p in d.create_pods) == [PS, W0, W1]
    annotations = c.pods[W1]["metadata"]["annotations"]
    assert annotations["volcano.sh/task-spec"] == "worker" and annotations["volcano.sh/task-index"] == "1"
    assert annotations["scheduling.k8s.io/group-name"] == PODGROUP and annotations["volcano.sh/job-version"] == "0"
    assert c.status["pending"] == 3 and c.phase == "Pending"
    assert c.step().create_pods == []  # nothing created twice


def test_running_then_completed_then_cleaned_up() -> None:
    c = cluster()
    c.start()
    assert c.phase == "Running" and c.status["running"] == 3
    c.set_phase("Succeeded")
    c.step()
    assert c.phase == "Completed"
    d = c.step()
    assert d.delete_podgroup == PODGROUP and d.delete_pods == []  # succeeded pods are kept


def test_all_finished_with_a_failure_fails_the_job() -> None:
    c = cluster()
    c.start()
    c.set_phase("Succeeded", PS, W0)
    c.set_phase("Failed", W1, exit_code=1)
    c.step()
    assert c.phase == "Failed" and c.status["failed"] == 1


def test_enough_succeeded_completes_when_min_available_is_lower() -> None:
    c = cluster(minAvailable=2)
    c.start()
    c.set_phase("Succeeded", PS, W0)
    c.set_phase("Failed", W1, exit_code=1)
    c.step()
    assert c.phase == "Completed"


def test_min_success_completes_early_and_stops_the_rest() -> None:
    c = cluster(minSuccess=2)
    c.start()
    c.set_phase("Succeeded", W0, W1)
    c.step()
    assert c.phase == "Completed"
    assert c.step().delete_pods == [PS]


def test_gang_broken_goes_back_to_pending() -> None:
    c = cluster()
    c.start()
    c.set_phase("Pending", W1)
    c.step()
    assert c.phase == "Pending"


RESTARTS = [
    pytest.param({"policies": [{"event": "PodFailed", "action": "RestartJob"}]}, {PS, W0, W1}, True, id="restart-job"),
    pytest.param({"policies": [{"event": "PodFailed", "action": "RestartTask"}]}, {W0, W1}, False, id="restart-task"),
    pytest.param({"policies": [{"event": "PodFailed", "action": "RestartPod"}]}, {W1}, False, id="restart-pod"),
    pytest.param({"policies": [{"exitCode": 137, "action": "RestartJob"}]}, {PS, W0, W1}, True, id="exit-code"),
    pytest.param({"policies": [{"event": "*", "action": "RestartJob"}]}, {PS, W0, W1}, True, id="any-event"),
]


@pytest.mark.parametrize("spec, deleted, new_version", RESTARTS)
def test_restart_actions(spec: dict[str, Any], deleted: set[str], new_version: bool) -> None:
    c = cluster(graceful=True, **spec)
    c.start()
    c.set_phase("Failed", W1, exit_code=137)
    d = c.step()
    assert c.phase == "Restarting" and c.status["retryCount"] == 1
    assert set(d.delete_pods) == deleted
    assert (d.delete_podgroup == PODGROUP) is new_version
    assert c.status["version"] == (1 if new_version else 0)
    c.step()
    assert c.phase == "Restarting"  # old pods still terminating
    c.gone()
    c.settle()
    assert c.phase == "Pending"
    if new_version:
        assert c.podgroup is not None and c.podgroup["metadata"]["annotations"]["volcano.sh/job-version"] == "1"
        c.enqueue()
        c.step()
    assert set(n for n in c.pods if n in deleted) == deleted  # recreated
    assert all(c.pods[n]["status"]["phase"] == "Pending" for n in deleted)
    c.set_phase("Running")
    c.step()
    assert c.phase == "Running"


def test_unmatched_exit_code_does_nothing() -> None:
    c = cluster(policies=[{"exitCode": 137, "action": "RestartJob"}])
    c.start()
    c.set_phase("Failed", W1, exit_code=1)
    d = c.step()
    assert c.phase == "Running" and d.delete_pods == []


def test_max_retry_fails_the_job() -> None:
    c = cluster(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    c.start()
    c.set_phase("Failed", W1, exit_code=1)
    c.settle()
    assert c.phase == "Pending" and c.status["retryCount"] == 1
    c.enqueue()
    c.step()
    c.set_phase("Running")
    c.step()
    c.set_phase("Failed", W0, exit_code=1)
    c.settle()
    assert c.phase == "Failed" and c.status["retryCount"] == 2
    assert c.status["state"]["reason"] == "MaxRetryReached"


def test_the_last_retry_keeps_the_finished_pods() -> None:
    c = cluster(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    c.start()
    c.set_phase("Failed", W1, exit_code=1)
    assert set(c.step().delete_pods) == {PS, W0, W1}  # a retry is left: everything goes
    c.settle()
    c.enqueue()
    c.step()
    c.set_phase("Running")
    c.step()
    c.set_phase("Failed", W0, exit_code=1)
    assert set(c.step().delete_pods) == {PS, W1}  # the last retry: the failed pod stays, for its logs
    c.settle()
    assert c.phase == "Failed" and W0 in c.pods


@pytest.mark.parametrize("action", ["TerminateJob", "RestartJob", "AbortJob"])
def test_every_action_but_a_sync_is_announced_as_volcano_does(action: str) -> None:
    c = cluster(policies=[{"event": "PodFailed", "action": action}])
    c.start()
    assert all(reason != "ExecuteAction" for reason, _ in c.step().events)  # syncs are not
    c.set_phase("Failed", W1, exit_code=1)
    events = c.step().events
    assert events[0] == ("ExecuteAction", f"Start to execute action {action} ")
    assert event_type(*events[0]) == "Normal"


def test_a_command_is_announced_and_the_loops_own_terminate_is_not() -> None:
    c = cluster()
    c.start()
    c.commands.append(command("AbortJob", "Job", "train", "ml"))
    assert ("ExecuteAction", "Start to execute action AbortJob ") in c.step().events
    c = cluster()
    c.start()
    d = reconcile(c.job, None, c.pods.values(), 0.0, action="TerminateJob")
    assert all(reason != "ExecuteAction" for reason, _ in d.events)


@pytest.mark.parametrize(
    "action, transient, final",
    [
        pytest.param("AbortJob", "Aborting", "Aborted", id="abort"),
        pytest.param("CompleteJob", "Completing", "Completed", id="complete"),
        pytest.param("TerminateJob", "Terminating", "Terminated", id="terminate"),
    ],
)
def test_stopping_actions(action: str, transient: str, final: str) -> None:
    c = cluster(graceful=True, policies=[{"event": "PodFailed", "action": action}])
    c.start()
    c.set_phase("Succeeded", PS)
    c.set_phase("Failed", W1, exit_code=2)
    d = c.step()
    assert c.phase == transient
    assert d.delete_pods == [W0] and d.delete_podgroup == PODGROUP  # finished pods are kept for their logs
    c.step()
    assert c.phase == transient
    c.gone()
    c.step()
    assert c.phase == final and set(c.pods) == {PS, W1}


def test_task_policy_before_job_policy() -> None:
    """The classic TF pattern: when the workers complete, complete the job (and stop the ps)."""
    tasks = [task("ps"), task("worker", 2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])]
    c = cluster(tasks=tasks, policies=[{"event": "TaskCompleted", "action": "AbortJob"}])
    c.start()
    c.set_phase("Succeeded", W0, W1)
    d = c.step()
    assert c.phase == "Completing" and d.delete_pods == [PS]
    c.step()
    assert c.phase == "Completed"


def test_task_failed_after_container_restarts() -> None:
    tasks = [task("ps"), task("worker", 2, maxRetry=2, policies=[{"event": "TaskFailed", "action": "TerminateJob"}])]
    c = cluster(tasks=tasks)
    c.start()
    c.pods[W0]["status"]["containerStatuses"] = [{"name": "main", "restartCount": 1}]
    assert c.step().delete_pods == []
    c.pods[W0]["status"]["containerStatuses"] = [{"name": "main", "restartCount": 2}]
    c.step()
    assert c.phase == "Terminating"


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"phase": "Failed", "reason": "Evicted"}, id="kubelet-eviction"),
        pytest.param(
            {"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}, id="eviction-api"
        ),
    ],
)
def test_pod_evicted(status: dict[str, Any]) -> None:
    c = cluster(policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    c.start()
    c.pods[W0]["status"] = status
    if status["phase"] == "Running":
        c.pods[W0]["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    c.step()
    assert c.phase == "Restarting"


def test_a_plain_pod_delete_is_pod_evicted() -> None:
    """`kubectl delete pod` on a job's pod restarts the job under RestartJob, as in Volcano."""
    c = cluster(policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    c.start()
    c.pods[W0]["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    c.step()
    assert c.phase == "Restarting"


def test_own_deletes_are_not_evictions() -> None:
    c = cluster(policies=[{"event": "PodEvicted", "action": "AbortJob"}])
    c.start()
    c.pods[W0]["metadata"]["annotations"][OUT_OF_SYNC] = "true"
    c.pods[W0]["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    c.step()
    assert c.phase != "Aborting"


def test_unknown_pod_event() -> None:
    c = cluster(policies=[{"event": "Unknown", "action": "AbortJob"}])
    c.start()
    c.set_phase("Unknown", PS)
    c.step()
    assert c.phase == "Aborting"


@pytest.mark.parametrize(("action", "phase"), [("RestartJob", "Restarting"), ("AbortJob", "Aborting")])
def test_an_unknown_podgroup_raises_the_jobs_unknown_event(action: str, phase: str) -> None:
    """Volcano's job controller turns the PodGroup's move to Unknown into the job's Unknown event."""
    c = cluster(policies=[{"event": "Unknown", "action": action}])
    c.start()
    assert c.podgroup is not None
    c.podgroup["status"]["phase"] = "Unknown"
    d = c.step()
    assert c.phase == phase
    assert any("Unknown on the job's PodGroup" in message for _, message in d.events)


def test_an_unknown_podgroup_of_an_older_version_or_without_a_policy_does_nothing() -> None:
    c = cluster(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    c.start()
    c.podgroup["status"]["phase"] = "Unknown"
    c.step()
    assert c.phase == "Running"
    c = cluster(policies=[{"event": "Unknown", "action": "RestartJob"}])
    c.start()
    c.podgroup["status"]["phase"] = "Unknown"
    c.podgroup["metadata"]["annotations"]["volcano.sh/job-version"] = "7"  # not this run's: left to be replaced
    c.step()
    assert c.phase != "Restarting"


def test_pod_pending_timeout_acts_at_its_time() -> None:
    c = cluster(policies=[{"event": "PodPending", "action": "RestartJob", "timeout": "10m"}])
    c.step()
    c.enqueue()
    c.step()
    d = c.step(advance=60)
    assert c.phase == "Pending" and d.requeue_after == pytest.approx(540)
    c.set_phase("Running", PS, W0)
    c.step(advance=600)
    assert c.phase == "Restarting"


def test_pod_pending_without_timeout_is_ignored() -> None:
    c = cluster(policies=[{"event": "PodPending", "action": "AbortJob"}])
    c.step()
    c.enqueue()
    c.step(advance=3600)
    assert c.phase == "Pending"


def test_failure_timeout_delays_the_action() -> None:
    c = cluster(policies=[{"event": "PodFailed", "action": "AbortJob", "timeout": "30s"}])
    c.start()
    c.set_phase("Failed", W1, exit_code=1)
    d = c.step()
    assert c.phase == "Running" and d.requeue_after == pytest.approx(30)
    c.step(advance=30)
    assert c.phase == "Aborting"


def test_pods_of_an_older_version_do_not_trigger_policies() -> None:
    c = cluster(policies=[{"event": "PodFailed", "action": "RestartTask"}])
    c.start()
    c.job["status"]["version"] = 1  # as after a restart whose old pod lingers
    c.set_phase("Failed", W1, exit_code=1)
    assert c.step().delete_pods == []


def test_suspend_and_resume_by_command() -> None:
    c = cluster(graceful=True)
    c.start()
    c.set_phase("Succeeded", PS)
    for round_ in range(3):  # suspending and resuming is not a failure: it never uses up retries
        c.commands.append(command("AbortJob", "Job", "train", "ml"))
        d = c.step()
        assert c.phase == "Aborting" and d.delete_commands == ["train-abortjob"] and c.commands == []
        c.gone()
        c.step()
        assert c.phase == "Aborted"
        c.commands.append(command("ResumeJob", "Job", "train", "ml"))
        c.step()
        assert c.phase == "Restarting" and c.status["version"] == round_ + 1 and c.status["retryCount"] == 0
        c.step()  # the finished pods of the previous run go too
        c.gone()
        c.settle()
        assert c.phase == "Pending" and c.pods == {}
        c.enqueue()
        c.step()
        c.set_phase("Running")
        c.step()
        assert c.phase == "Running"
        assert all(p["metadata"]["annotations"]["volcano.sh/job-version"] == str(round_ + 1) for p in c.pods.values())


def test_commands_for_other_jobs_are_left_alone() -> None:
    c = cluster()
    c.start()
    c.commands.append(command("AbortJob", "Job", "other", "ml"))
    d = c.step()
    assert c.phase == "Running" and d.delete_commands == []


def test_depends_on_waits_for_the_named_tasks() -> None:
    tasks = [task("ps"), task("worker", 2, dependsOn={"name": ["ps"]})]
    c = cluster(tasks=tasks)
    c.step()
    c.enqueue()
    assert [p["metadata"]["name"] for p in c.step().create_pods] == [PS]
    assert c.step().create_pods == []
    c.set_phase("Running", PS)
    c.pods[PS]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert c.step().create_pods == []
    c.pods[PS]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert sorted(p["metadata"]["name"] for p in c.step().create_pods) == [W0, W1]


def test_depends_on_any() -> None:
    tasks = [task("a"), task("b"), task("c", dependsOn={"name": ["a", "b"], "iteration": "any"})]
    c = cluster(tasks=tasks)
    c.step()
    c.enqueue()
    c.step()
    c.set_phase("Succeeded", "train-b-0")
    assert [p["metadata"]["name"] for p in c.step().create_pods] == ["train-c-0"]


def test_scale_down_deletes_pods_beyond_replicas() -> None:
    c = cluster()
    c.start()
    c.job["spec"]["tasks"][1]["replicas"] = 1
    c.job["spec"]["minAvailable"] = 2
    assert c.step().delete_pods == [W1]


def test_stale_podgroup_is_replaced() -> None:
    c = cluster()
    c.start()
    c.job["status"]["version"] = 2
    c.podgroup["metadata"]["annotations"]["volcano.sh/job-version"] = "1"
    d = c.step()
    assert d.delete_podgroup == PODGROUP and d.create_pods == []


def test_ttl_after_finished() -> None:
    c = cluster(ttlSecondsAfterFinished=60)
    c.start()
    c.set_phase("Succeeded")
    c.step()
    assert c.phase == "Completed"
    d = c.step(advance=20)
    assert d.requeue_after == pytest.approx(40) and not d.delete_job
    assert c.step(advance=40).delete_job


def test_decision_is_stable_when_nothing_changes() -> None:
    c = cluster()
    c.start()
    d = c.step()
    assert not d.status_changed and d.create_pods == [] and d.delete_pods == [] and d.requeue_after is None


def test_a_job_being_deleted_is_left_to_the_garbage_collector() -> None:
    c = cluster()
    c.start()
    c.job["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    c.set_phase("Failed", W1, exit_code=1)
    d = c.step()
    assert d.delete_pods == [] and d.create_pods == [] and d.delete_podgroup is None and c.phase == "Running"


def test_scaling_the_job_resizes_its_podgroup() -> None:
    c = cluster()
    c.start()
    assert c.step().update_podgroup is None
    c.job["spec"]["tasks"][1].update(replicas=4, minAvailable=4)
    c.job["spec"]["minAvailable"] = 5
    d = c.step()
    assert d.update_podgroup is not None
    assert (d.update_podgroup["minMember"], d.update_podgroup["minTaskMember"]) == (5, {"ps": 1, "worker": 4})
    assert sorted(p["metadata"]["name"] for p in d.create_pods) == ["train-worker-2", "train-worker-3"]


def test_a_job_scaled_to_zero_keeps_its_phase_and_svc_objects() -> None:
    c = cluster(plugins={"svc": []})
    c.start()
    assert c.phase == "Running"
    c.job["spec"]["minAvailable"] = 0
    for t in c.job["spec"]["tasks"]:
        t.update(replicas=0, minAvailable=0)
    c.settle()
    assert c.phase == "Running" and c.pods == {}
    d = c.step()
    assert d.delete_objects == [] and ("ConfigMap", "train-svc") not in d.delete_objects


def test_volumes_are_claimed_once_and_mounted() -> None:
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    c = cluster(
        volumes=[{"mountPath": "/data", "volumeClaimName": "shared"}, {"mountPath": "/ckpt", "volumeClaim": claim}]
    )
    d = c.step()
    pvcs = [o for o in d.create_objects if o["kind"] == "PersistentVolumeClaim"]
    assert [(p["metadata"]["name"], p["spec"]) for p in pvcs] == [("train-volume-1", claim)]
    assert c.status["controlledResources"] == {
        "volume-pvc-shared": "shared",  # named claims are recorded too, as Volcano does
        "volume-pvc-train-volume-1": "train-volume-1",
    }
    assert c.step().create_objects == []
    c.enqueue()
    c.step()
    spec = c.pods[W0]["spec"]
    assert {"name": "train-volume-1", "persistentVolumeClaim": {"claimName": "train-volume-1"}} in spec["volumes"]
    assert {"name": "shared", "mountPath": "/data"} in spec["containers"][0]["volumeMounts"]
    assert {"name": "train-volume-1", "mountPath": "/ckpt"} in spec["containers"][0]["volumeMounts"]


def test_scaling_a_running_job_refreshes_the_svc_host_lists() -> None:
    c = cluster(plugins={"svc": []})
    c.start()
    assert c.step().update_objects == []
    c.job["spec"]["tasks"][1]["replicas"] = 3
    (config_map,) = c.step().update_objects
    assert config_map["metadata"]["name"] == "train-svc" and config_map["data"]["VC_WORKER_NUM"] == "3"
    c.job["spec"]["tasks"][1]["replicas"] = 1
    c.job["spec"]["minAvailable"] = 2
    assert c.step().update_objects[0]["data"]["worker.host"] == "train-worker-0.train"


def test_a_task_scaled_to_zero_by_a_go_client_has_no_replicas_field() -> None:
    """Go's clients drop a 0 (`omitempty`): a task without `replicas` has none, as Volcano reads it."""
    c = cluster(plugins={"svc": []})
    c.start()
    del c.job["spec"]["tasks"][1]["replicas"]
    c.job["spec"]["tasks"][1]["minAvailable"] = 0
    c.job["spec"]["minAvailable"] = 1
    d = c.step()
    assert sorted(d.delete_pods) == [W0, W1]
    assert d.update_objects[0]["data"]["VC_WORKER_NUM"] == "0"


def test_a_named_claim_must_exist_before_the_job_starts() -> None:
    c = cluster(volumes=[{"mountPath": "/data", "volumeClaimName": "shared"}, {"mountPath": "/x", "volumeClaim": {}}])
    assert missing_claims(c.job, set()) == ["shared"]  # the created one is the controller's own business
    assert missing_claims(c.job, {"shared", "other"}) == []


def test_scaling_a_pending_job_refreshes_the_svc_host_lists_when_its_pods_are_made() -> None:
    c = cluster(plugins={"svc": []})
    c.step()
    c.job["spec"]["tasks"][1]["replicas"] = 3  # scaled before the PodGroup was enqueued
    c.step()
    c.enqueue()
    d = c.step()
    assert len(d.create_pods) == 4
    (config_map,) = d.update_objects  # the ConfigMap made at the start still lists two workers
    assert config_map["data"]["VC_WORKER_NUM"] == "3"


def test_scaling_changes_every_field_volcano_updates_on_the_podgroup() -> None:
    c = cluster()
    c.start()
    c.job["spec"]["tasks"] = c.job["spec"]["tasks"][1:]  # the ps task removed
    c.job["spec"]["minAvailable"] = 1
    c.job["spec"]["priorityClassName"] = "high"
    update = c.step().update_podgroup
    assert update is not None
    assert (update["minMember"], update["minTaskMember"], update["priorityClassName"]) == (1, {"worker": 2}, "high")
    assert "minResources" in update  # the first minMember pods' requests (none in this template)


def test_terminate_from_the_loop_wins_over_commands_and_policies() -> None:
    c = cluster()
    c.start()
    c.commands.append(command("RestartJob", "Job", "train", namespace="default"))
    d = reconcile(c.job, c.podgroup, list(c.pods.values()), c.now, c.commands, action="TerminateJob")
    assert d.status["state"]["phase"] == "Terminating"
    assert sorted(d.delete_pods) == [PS, W0, W1] and d.delete_podgroup == PODGROUP
    assert d.delete_commands == []  # the user's Command is not consumed by the loop's own action


def test_the_webhooks_limits_bound_what_the_controller_expands() -> None:
    """Given the webhook's (lowered) limits, a Job beyond them that got in anyway (admitted
    before the limits were lowered) becomes InvalidJob naming the field, and no pod is made."""
    from central.model.jobs import JobLimits

    decision = reconcile(job(tasks=[task("worker", 3)]), None, [], 0.0, limits=JobLimits(max_replicas=2))
    assert not decision.create_pods and decision.create_podgroup is None
    [(reason, message)] = decision.events
    assert reason == "InvalidJob" and "spec.tasks" in message and "2" in message
    assert reconcile(job(tasks=[task("worker", 3)]), None, [], 0.0).create_podgroup is not None  # default limits


@pytest.mark.parametrize(("reason", "message", "kind"), [
    pytest.param("Aborting", "Aborting -> Aborted: all pods have stopped after the AbortJob command", "Normal",
                 id="a-suspend-the-user-asked-for"),
    pytest.param("Aborting", "Aborting -> Aborted: all pods have stopped", "Warning", id="aborted-by-a-policy"),
    pytest.param("Failed", "Running -> Failed: only 1 of 3 pods succeeded", "Warning", id="failed"),
    pytest.param("InvalidJob", "spec.tasks: a job needs at least one task", "Warning", id="invalid"),
    pytest.param("AbortJob", "Running -> Aborting: AbortJob command", "Normal", id="aborting-on-request"),
])
def test_event_types(reason: str, message: str, kind: str) -> None:
    assert event_type(reason, message) == kind


def test_a_suspend_ends_in_an_event_that_says_the_user_asked() -> None:
    c = cluster()
    c.step()
    c.enqueue()
    c.step()
    c.commands.append(command("AbortJob", "Job", "train", "ml"))
    messages = []
    for _ in range(4):
        messages += [m for _, m in c.step().events]
    assert any(m.endswith("all pods have stopped after the AbortJob command") for m in messages), messages


def test_a_pending_job_says_why_its_podgroup_waits() -> None:
    c = cluster()
    c.step()
    why = "3/3 tasks in gang unschedulable: pod group is not ready; queue default: it can never be admitted"
    c.podgroup["status"] = {"phase": "Pending", "conditions": [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": why,
         "lastTransitionTime": "2026-01-01T00:00:05Z"}]}
    c.step()
    assert (c.status["state"]["phase"], c.status["state"]["reason"], c.status["state"]["message"]) == (
        "Pending", "Unschedulable", why)


def test_restart_partition_restarts_the_failed_pods_partition_only() -> None:
    """Volcano's RestartPartition: the pods sharing the failed pod's partition-id in its task."""
    c = FakeCluster(job(tasks=[task("worker", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})],
                        policies=[{"event": "PodFailed", "action": "RestartPartition"}]), graceful=True)
    c.start()
    c.set_phase("Failed", "train-worker-3", exit_code=1)
    d = c.step()
    assert c.phase == "Restarting" and c.status["retryCount"] == 1
    assert set(d.delete_pods) == {"train-worker-2", "train-worker-3"}
    assert d.delete_podgroup is None
