"""The Job controller loop with the real scheduler, against the stand-in: a Job runs to
completion; suspend and resume through the CLI; a failing API is retried."""

from __future__ import annotations

import threading

import pytest

from central.admission.jobs import mutate_job
from central.cli import main
from central.framework.conf import DEFAULT_CONF_YAML, load_config
from central.kube.client import CORE, VOLCANO_BATCH, VOLCANO_SCHEDULING, ApiError, path
from central.kube.controllers import JobController, PodGroupController, QueueController
from central.kube.controllers_cli import run_controllers
from central.kube.events import EventRecorder
from central.kube.scheduler import ConfigFile, Scheduler
from central.kube.workqueue import WorkQueue
from central.model.cache import ClusterCache
from central.scheduler.cycle import run_cycle
from tests.kube.conftest import eventually
from tests.kube.fakes import node
from tests.kube.fakes import pod as pod_spec


def vcjob(name: str, replicas: int = 2) -> dict:
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"minAvailable": replicas, "tasks": [{"name": "worker", "replicas": replicas, "template": {
               "spec": {"restartPolicy": "Never", "containers": [{
                   "name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    return mutate_job(job)  # as the admission webhook would have defaulted it


@pytest.fixture
def cluster(api, kube):
    """Controllers and scheduler running; yields a function reading a job's phase."""
    api.put(node("n1"))
    stop = threading.Event()
    controller = JobController(kube, EventRecorder(kube, "vc-controller-manager"), workers=2)
    scheduler = Scheduler(kube, ClusterCache(), run_cycle,
                          ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default")), period=0.05)
    threads = [threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True),
               threading.Thread(target=scheduler.run, args=(stop,), daemon=True)]
    for thread in threads:
        thread.start()

    def phase(name: str) -> str:
        job = api.store.get("vcjobs", "default", name) or {}
        return ((job.get("status") or {}).get("state") or {}).get("phase", "")

    yield phase
    stop.set()
    for thread in threads:
        thread.join(10)


def pods_of(api, job: str) -> dict[str, dict]:
    return {name: obj for (_, name), obj in list(api.store.objects["pods"].items())
            if (obj["metadata"].get("labels") or {}).get("volcano.sh/job-name") == job}


def kubelet(kube, api, job: str, phase: str) -> None:
    """What the kubelet would report: every bound pod of the job in `phase`."""
    for name, pod in pods_of(api, job).items():
        if pod["spec"].get("nodeName"):
            kube.merge_patch(path(CORE, "pods", "default", name, "status"), {"status": {"phase": phase}})


def test_job_runs_to_completion(api, kube, cluster):
    kube.create(path(VOLCANO_BATCH, "jobs", "default"), vcjob("train"))
    eventually(lambda: api.store.get("podgroups", "default", "train"), what="the PodGroup")
    eventually(lambda: len(pods_of(api, "train")) == 2 and all(
        p["spec"].get("nodeName") for p in pods_of(api, "train").values()), what="pods created and bound")
    assert sorted(pods_of(api, "train")) == ["train-worker-0", "train-worker-1"]
    kubelet(kube, api, "train", "Running")
    eventually(lambda: cluster("train") == "Running", what="the job Running")
    kubelet(kube, api, "train", "Succeeded")
    eventually(lambda: cluster("train") == "Completed", what="the job Completed")
    status = api.store.get("vcjobs", "default", "train")["status"]
    assert status["succeeded"] == 2


def test_suspend_and_resume_through_the_cli(api, kube, kubeconfig, cluster, capsys):
    kube.create(path(VOLCANO_BATCH, "jobs", "default"), vcjob("train"))
    eventually(lambda: len(pods_of(api, "train")) == 2 and all(
        p["spec"].get("nodeName") for p in pods_of(api, "train").values()), what="pods bound")
    kubelet(kube, api, "train", "Running")
    eventually(lambda: cluster("train") == "Running", what="Running")
    assert main(["job", "suspend", "-N", "train", "--kubeconfig", kubeconfig]) == 0
    eventually(lambda: cluster("train") == "Aborted", what="Aborted")
    assert not pods_of(api, "train") and not api.store.objects["commands"]  # pods gone, Command consumed

    def event_types() -> dict[str, str]:  # Events are written by their own worker: wait for them
        return {e["message"].split(":")[0]: e["type"] for e in list(api.store.objects["events"].values())
                if e["involvedObject"]["kind"] == "Job"}

    eventually(lambda: event_types().get("Aborting -> Aborted") == "Warning", what="a Warning for the abort")
    assert event_types().get("Pending -> Running") == "Normal"
    assert main(["job", "resume", "-N", "train", "--kubeconfig", kubeconfig]) == 0
    eventually(lambda: len(pods_of(api, "train")) == 2, what="pods again after resume")
    assert cluster("train") in ("Restarting", "Pending", "Running")


def test_api_failures_are_retried(api, kube, cluster):
    api.store.fail("create", "pods", times=3, code=500)
    kube.create(path(VOLCANO_BATCH, "jobs", "default"), vcjob("train", replicas=1))
    eventually(lambda: pods_of(api, "train"), what="the pod despite three refused creates")
    assert api.store.count("create", "pods") == 4


def queue(name: str, parent: str | None = None) -> dict:
    spec = {"weight": 1, **({"parent": parent} if parent else {})}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def queue_controller(kube):
    stop = threading.Event()
    controller = QueueController(kube, EventRecorder(kube, "vc-controller-manager"))
    thread = threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True)
    thread.start()
    yield controller
    stop.set()
    thread.join(10)


def test_queue_close_through_the_cli_cascades_and_reopens(api, kube, kubeconfig, queue_controller):
    def state(name: str) -> str:
        return ((api.store.get("queues", "", name) or {}).get("status") or {}).get("state", "")

    api.put(queue("research"))
    api.put(queue("vision", parent="research"))
    api.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 1, "queue": "vision"},
             "status": {"phase": "Running"}})
    eventually(lambda: state("research") == "Open" and state("vision") == "Open", what="queues Open")
    assert api.store.get("queues", "", "vision")["status"]["running"] == 1

    assert main(["queue", "operate", "-n", "research", "-a", "close", "--kubeconfig", kubeconfig]) == 0
    eventually(lambda: state("research") == "Closed", what="research Closed")
    eventually(lambda: state("vision") == "Closing", what="vision Closing while its PodGroup runs")
    annotations = api.store.get("queues", "", "vision")["metadata"]["annotations"]
    assert annotations["volcano.sh/closed-by-parent"] == "true"
    eventually(lambda: not api.store.objects["commands"], what="the Command consumed")

    kube.merge_patch(path(VOLCANO_SCHEDULING, "podgroups", "default", "pg"),
                     {"status": {"phase": "Completed"}})
    eventually(lambda: state("vision") == "Closed", what="vision Closed once drained")

    assert main(["queue", "operate", "-n", "research", "-a", "open", "--kubeconfig", kubeconfig]) == 0
    eventually(lambda: state("research") == "Open" and state("vision") == "Open", what="both reopened")


def test_plain_pods_get_a_podgroup(api, kube):
    owner = api.put({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                     "metadata": {"name": "web", "namespace": "default",
                                  "annotations": {"scheduling.volcano.sh/group-min-member": "2"}}, "spec": {}})
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": owner["metadata"]["uid"],
           "controller": True}
    for i in range(2):
        p = pod_spec(f"web-{i}")
        p["metadata"]["ownerReferences"] = [ref]
        api.put(p)
    api.put(pod_spec("other", scheduler="default-scheduler"))
    stop = threading.Event()
    controller = PodGroupController(kube, EventRecorder(kube, "vc-controller-manager"))
    thread = threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True)
    thread.start()
    group = f"podgroup-{owner['metadata']['uid']}"
    try:
        eventually(lambda: all((api.store.get("pods", "default", f"web-{i}")["metadata"].get("annotations") or {})
                               .get("scheduling.k8s.io/group-name") == group for i in range(2)), what="annotations")
    finally:
        stop.set()
        thread.join(10)
    podgroup = api.store.get("podgroups", "default", group)
    assert podgroup["spec"]["minMember"] == 2 and podgroup["spec"]["minResources"] == {"cpu": "2"}
    assert list(api.store.objects["podgroups"]) == [("default", group)]  # one for the ReplicaSet, none for `other`


def test_a_volume_claim_is_created_owned_by_the_job_and_mounted(api, kube, cluster):
    job = vcjob("train", replicas=1)
    job["spec"]["volumes"] = [{"mountPath": "/ckpt", "volumeClaim": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        {"mountPath": "/data", "volumeClaimName": "shared"}]
    api.put({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "shared", "namespace": "default"}, "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "1Gi"}}}})
    kube.create(path(VOLCANO_BATCH, "jobs", "default"), job)
    claim = eventually(lambda: api.store.get("persistentvolumeclaims", "default", "train-volume-0"), what="the PVC")
    job_uid = api.store.get("vcjobs", "default", "train")["metadata"]["uid"]
    assert [(o["kind"], o["uid"]) for o in claim["metadata"]["ownerReferences"]] == [("Job", job_uid)]
    [pod] = eventually(lambda: list(pods_of(api, "train").values()), what="the pod")
    volumes = pod["spec"]["volumes"]
    assert {"name": "train-volume-0", "persistentVolumeClaim": {"claimName": "train-volume-0"}} in volumes
    assert {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}} in volumes  # used as is
    assert api.store.get("persistentvolumeclaims", "default", "shared")["metadata"].get("ownerReferences") is None


def test_a_missing_claim_is_retried_boundedly_then_the_job_is_terminated(api, kube):
    job = vcjob("train", replicas=1)
    job["spec"]["volumes"] = [{"mountPath": "/data", "volumeClaimName": "absent"}]
    kube.create(path(VOLCANO_BATCH, "jobs", "default"), job)
    controller = JobController(kube, EventRecorder(kube, "vc-controller-manager"), workers=1)
    controller.queue = WorkQueue(base_delay=0.001, max_delay=0.01)  # Volcano's backoff, compressed
    stop = threading.Event()
    thread = threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True)
    thread.start()
    try:
        eventually(lambda: ((api.store.get("vcjobs", "default", "train").get("status") or {}).get("state") or {})
                   .get("phase") in ("Terminating", "Terminated"), what="the job terminated")
    finally:
        stop.set()
        thread.join(10)
    assert not pods_of(api, "train") and api.store.get("podgroups", "default", "train") is None
    eventually(lambda: {"ExecuteAction", "PVCError"} <= {
        e["reason"] for e in list(api.store.objects["events"].values())}, what="the Events")
    for event in api.store.objects["events"].values():
        if event["reason"] in ("ExecuteAction", "PVCError"):
            assert "pvc absent is not found" in event["message"] and event["type"] == "Warning"


def test_scaling_updates_the_podgroup_and_the_svc_host_lists(api, kube, cluster):
    job = vcjob("train", replicas=2)
    job["spec"]["plugins"] = {"svc": ["--disable-network-policy"]}
    kube.create(path(VOLCANO_BATCH, "jobs", "default"), job)
    eventually(lambda: len(pods_of(api, "train")) == 2, what="two pods")

    def scale(replicas: int) -> bool:
        current = kube.get(path(VOLCANO_BATCH, "jobs", "default", "train"))
        current["spec"]["minAvailable"] = replicas
        current["spec"]["tasks"][0].update(replicas=replicas, minAvailable=replicas)
        try:
            kube.request("PUT", path(VOLCANO_BATCH, "jobs", "default", "train"), body=current)
            return True
        except ApiError as err:  # the controller wrote the job's status meanwhile: as kubectl, read again
            if err.code != 409:
                raise
            return False

    def hosts() -> str:  # deleted and created again on a scale: absent for a moment
        return (api.store.get("configmaps", "default", "train-svc") or {"data": {}})["data"].get("VC_WORKER_HOSTS", "")

    eventually(lambda: scale(3), what="scaled to 3")
    eventually(lambda: len(pods_of(api, "train")) == 3, what="three pods")
    eventually(lambda: hosts().count(",") == 2, what="three hosts")
    spec = api.store.get("podgroups", "default", "train")["spec"]
    assert (spec["minMember"], spec["minTaskMember"], spec["minResources"]) == (3, {"worker": 3}, {"cpu": "3"})
    eventually(lambda: scale(1), what="scaled to 1")
    eventually(lambda: hosts() == "train-worker-0.train", what="one host")
    eventually(lambda: api.store.get("podgroups", "default", "train")["spec"]["minMember"] == 1, what="minMember 1")
    assert api.store.get("podgroups", "default", "train")["spec"]["minTaskMember"] == {"worker": 1}
    # written when the job was made and once per scale: never read, never rewritten unchanged
    assert (api.store.count("create", "configmaps"), api.store.count("delete", "configmaps")) == (3, 2)
