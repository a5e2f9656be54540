"""What people and tools read on a real control plane: the PodScheduled condition autoscalers
filter on, why a PodGroup waits (condition, Event, the Job's state), PodGroup counts after a
scheduler restart, and no write loop with an operator that writes PodGroups as the Go client
does."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from central.kube.client import ApiError
from tests.e2e.conftest import Tenant, volcano_job, wait_for

PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
AUTOSCALED_SCHEDULERS = {"volcano"}  # cluster-autoscaler's --bypassed-scheduler-names / the default one


def autoscaler_sees(tenant: Tenant) -> list[str]:
    """The pods cluster-autoscaler scales up for: unassigned, not finished, PodScheduled False
    with reason Unschedulable, of a scheduler it is configured for."""
    query = "?fieldSelector=spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
    pods = tenant.kube.get(f"/api/v1/namespaces/{tenant.namespace}/pods{query}")["items"]
    return sorted(p["metadata"]["name"] for p in pods
                  if p["spec"].get("schedulerName") in AUTOSCALED_SCHEDULERS
                  and any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
                          for c in p.get("status", {}).get("conditions") or []))


def podscheduled(pod: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"), {})


def unschedulable(pg: dict[str, Any] | None) -> str:
    return next((c.get("message", "") for c in ((pg or {}).get("status") or {}).get("conditions") or []
                 if c["type"] == "Unschedulable"), "")


def test_a_pending_gang_shows_autoscalers_its_demand_and_is_cleared_on_bind(tenant: Tenant) -> None:
    job = volcano_job("wants-gpu-node", tenant.queue, replicas=2)
    job["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {"signals.caldera.sh/pool": "new"}
    tenant.submit(job)
    names = ["wants-gpu-node-worker-0", "wants-gpu-node-worker-1"]
    wait_for(lambda: autoscaler_sees(tenant) == names, "both pods of the gang marked Unschedulable")
    messages = [podscheduled(p)["message"] for p in tenant.pods()]
    assert any("node(s) didn't match Pod's node affinity/selector" in m for m in messages), messages
    # the recorder writes Events from its own thread: the pod's condition may come first
    wait_for(lambda: any(e["reason"] == "FailedScheduling" and e["type"] == "Warning"
                         for e in tenant.events("Pod", names[0])), "a FailedScheduling Event")
    node = "/api/v1/nodes/node-1"
    tenant.kube.merge_patch(node, {"metadata": {"labels": {"signals.caldera.sh/pool": "new"}}})
    try:
        wait_for(lambda: all(p["spec"].get("nodeName") for p in tenant.pods()) and len(tenant.pods()) == 2,
                 "the gang bound once a node matches")
        # the API server sets PodScheduled True on bind: nothing for an autoscaler left
        wait_for(lambda: autoscaler_sees(tenant) == [], "the condition cleared")
        assert all(podscheduled(p)["status"] == "True" for p in tenant.pods())
        wait_for(lambda: any(e["reason"] == "Scheduled" for e in tenant.events("Pod", names[0])), "a Scheduled Event")
    finally:
        tenant.kube.merge_patch(node, {"metadata": {"labels": {"signals.caldera.sh/pool": None}}})


def set_capability(tenant: Tenant, cpu: str) -> None:
    tenant.kube.merge_patch(f"/apis/scheduling.volcano.sh/v1beta1/queues/{tenant.queue}",
                            {"spec": {"capability": {"cpu": cpu}}})


def test_a_job_refused_at_enqueue_is_told_why_never_and_not_now_apart(tenant: Tenant) -> None:
    set_capability(tenant, "4")
    tenant.submit(volcano_job("never", tenant.queue, replicas=5, cpu="1"))
    pg = wait_for(lambda: "can never be admitted" in unschedulable(tenant.job_podgroup("never"))
                  and tenant.job_podgroup("never"), "the never-fitting job's condition")
    assert pg["status"]["phase"] == "Pending"
    assert "cpu: the job needs 5, more than the queue's capability 4" in unschedulable(pg)
    events = wait_for(lambda: [e for e in tenant.events("PodGroup", pg["metadata"]["name"])
                               if e["reason"] == "Unschedulable" and e["type"] == "Warning"], "the Warning Event")
    assert "more than the queue's capability 4" in events[0]["message"]
    state = wait_for(lambda: (tenant.job("never").get("status") or {}).get("state", {}).get("reason") == "Unschedulable"
                     and tenant.job("never")["status"]["state"], "the Job's state says why")
    assert state["phase"] == "Pending" and "can never be admitted" in state["message"]
    assert tenant.pods() == []  # not admitted: the controller makes no pod

    tenant.submit(volcano_job("first", tenant.queue, replicas=3, cpu="1", duration="10m"))
    wait_for(lambda: ((tenant.job_podgroup("first") or {}).get("status") or {}).get("phase") == "Running",
             "the first job's PodGroup running")
    tenant.submit(volcano_job("later", tenant.queue, replicas=2, cpu="1"))
    wait_for(lambda: "resource quota insufficient" in unschedulable(tenant.job_podgroup("later")),
             "the not-now job's condition")
    message = unschedulable(tenant.job_podgroup("later"))
    assert "cpu: the job needs 2, the queue uses 3 of 4 (its capability)" in message
    assert "never" not in message


def test_a_podless_podgroup_held_at_enqueue_gets_pending_a_condition_and_an_event(tenant: Tenant) -> None:
    """As training-operator creates it: no status; it makes no pod until the phase says so."""
    set_capability(tenant, "2")
    tenant.create(PODGROUPS.format(ns=tenant.namespace), {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "operator-pg"},
        "spec": {"minMember": 3, "queue": tenant.queue, "minResources": {"cpu": "3"}}})
    pg = wait_for(lambda: unschedulable(tenant.podgroup("operator-pg")) and tenant.podgroup("operator-pg"),
                  "the held PodGroup's condition")
    assert pg["status"]["phase"] == "Pending"
    assert "more than the queue's capability 2" in unschedulable(pg)
    wait_for(lambda: any(e["reason"] == "Unschedulable" and e["type"] == "Warning"
                         for e in tenant.events("PodGroup", "operator-pg")), "the Warning Event")


def test_the_pods_of_a_gang_still_short_of_pods_show_autoscalers_no_demand(tenant: Tenant) -> None:
    """A PodGroup of 3 with 2 pods so far, as an operator still creating them: the PodGroup says
    why it waits, and its pods carry no PodScheduled=False for an autoscaler to add nodes for
    (Volcano leaves a job its JobValid refuses out of the session)."""
    tenant.create(PODGROUPS.format(ns=tenant.namespace), {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "short"},
        "spec": {"minMember": 3, "queue": tenant.queue}})
    for i in range(2):
        tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"short-{i}", "annotations": {"scheduling.k8s.io/group-name": "short"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}})
    wait_for(lambda: "not enough valid tasks" in unschedulable(tenant.podgroup("short")), "the PodGroup's condition")
    time.sleep(2)  # more cycles, each of which would have written the condition
    assert autoscaler_sees(tenant) == []
    assert not any(e["reason"] == "FailedScheduling" for e in tenant.events("Pod", "short-0"))


def go_client_copy(pg: dict[str, Any]) -> dict[str, Any]:
    """The object as a Go operator writes it back: typed structs, every status field
    `omitempty` (no `message: ""`, no zero counts, no empty lists)."""
    def keep(v: Any) -> bool:
        return v not in ("", 0, None, [], {})
    status = {k: v for k, v in (pg.get("status") or {}).items() if keep(v)}
    if "conditions" in status:
        status["conditions"] = [{k: v for k, v in c.items() if keep(v)} for c in status["conditions"]]
    return {**pg, "status": status}


def test_an_operator_writing_podgroups_as_the_go_client_does_causes_no_write_loop(tenant: Tenant) -> None:
    """training-operator's SyncPodGroup writes its PodGroup back on every sync (its equality
    check compares a pointer with a value). With statuses compared as the API returns them,
    the scheduler and it settle: a handful of changes a minute, not hundreds."""
    url = PODGROUPS.format(ns=tenant.namespace)
    tenant.create(url, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": "pytorchjob"}, "spec": {"minMember": 1, "queue": tenant.queue}})
    tenant.create(f"/api/v1/namespaces/{tenant.namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "pytorchjob-master-0", "annotations": {"scheduling.k8s.io/group-name": "pytorchjob"}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": "100m"}}}]}})
    wait_for(lambda: ((tenant.podgroup("pytorchjob") or {}).get("status") or {}).get("running") == 1,
             "the PodGroup running")
    puts, versions, stop = [0], set(), threading.Event()

    def operator() -> None:
        while not stop.wait(0.2):
            pg = tenant.podgroup("pytorchjob")
            if pg is None:
                return
            try:
                written = tenant.kube.request("PUT", f"{url}/pytorchjob", body=go_client_copy(pg))
                puts[0] += 1
                versions.add(written["metadata"]["resourceVersion"])
            except ApiError as err:
                if err.code != 409:  # a conflict: the next sync reads again, as the operator does
                    raise

    before = tenant.podgroup("pytorchjob")["metadata"]["resourceVersion"]
    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    time.sleep(60)
    stop.set()
    thread.join(10)
    after = tenant.podgroup("pytorchjob")
    changes = len(versions - {before})
    assert puts[0] > 100, puts  # it kept writing, as the operator does
    assert changes <= 5, f"{changes} changes of the PodGroup in a minute of {puts[0]} operator PUTs"
    assert after["status"]["phase"] == "Running" and after["status"]["running"] == 1


def test_podgroup_counts_are_right_after_a_scheduler_restart(tenant: Tenant) -> None:
    cluster = tenant.cluster
    tenant.submit(volcano_job("gang", tenant.queue, replicas=4, cpu="1", duration="10m"))
    wait_for(lambda: ((tenant.job_podgroup("gang") or {}).get("status") or {}).get("running") == 4,
             "the gang's PodGroup running 4")
    cluster.sup.stop("caldera-scheduler", signal.SIGKILL)
    try:
        # what a scheduler killed mid-gang may leave: counts behind, a stale Unschedulable condition
        pg = tenant.job_podgroup("gang")
        pg["status"] = {**pg["status"], "running": 1, "conditions": [
            {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "transitionID": "old",
             "message": "3/4 tasks in gang unschedulable", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            *pg["status"].get("conditions", [])]}
        tenant.kube.request("PUT", f"{PODGROUPS.format(ns=tenant.namespace)}/{pg['metadata']['name']}", body=pg)
    finally:
        cluster.start("caldera-scheduler")
    pg = wait_for(lambda: ((tenant.job_podgroup("gang") or {}).get("status") or {}).get("running") == 4
                  and tenant.job_podgroup("gang"), "the restarted scheduler rewrites the counts", timeout=90)
    assert pg["status"]["phase"] == "Running"
    scheduled = [c for c in pg["status"]["conditions"] if c["type"] == "Scheduled"]
    assert scheduled and scheduled[0]["transitionID"] != "old"
