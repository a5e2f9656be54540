"""The Job controller loop with the real scheduler, on a real kube-apiserver: a Job runs to
completion; suspend and resume through the CLI; a failing API is retried. No kubelet runs:
the tests report pod phases themselves, and pods have no grace period, so a deletion is final."""

from __future__ import annotations

import threading
import time

import pytest

from central.admission.jobs import mutate_job
from central.cli import main
from central.controllers.loops.command import run_controllers
from central.controllers.loops.jobs import JobController
from central.controllers.loops.podgroups import PodGroupController
from central.controllers.loops.queues import QueueController
from central.framework.conf import DEFAULT_CONF_YAML
from central.kube.client import CORE, VOLCANO_BATCH, VOLCANO_BUS, VOLCANO_SCHEDULING, ApiError, path
from central.kube.events import EventRecorder
from central.kube.workqueue import WorkQueue
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import job, node, pod, queue, task
from tests.waiting import eventually


def vcjob(name: str, replicas: int = 2) -> dict:
    """A one-task Job as the admission webhook would have defaulted it; its pods have no grace period."""
    worker = task("worker", replicas, cpu="1", pod_spec={"terminationGracePeriodSeconds": 0})
    return mutate_job(job(name, None, queue=None, minAvailable=replicas, tasks=[worker]))


@pytest.fixture
def cluster(real):
    """Controllers and scheduler running; yields a function reading a job's phase."""
    real.put(node("n1", pods=10))
    kube = real.kube
    stop = threading.Event()
    controller = JobController(kube, EventRecorder(kube, "vc-controller-manager"), workers=2)
    scheduler = Scheduler(kube, ClusterCache(), run_cycle,
                          ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default")), period=0.05)
    threads = [threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True),
               threading.Thread(target=scheduler.run, args=(stop,), daemon=True)]
    for thread in threads:
        thread.start()

    def phase(name: str) -> str:
        job = real.get(*VCJOB, name) or {}
        return ((job.get("status") or {}).get("state") or {}).get("phase", "")

    yield phase
    stop.set()
    for thread in threads:
        thread.join(10)


VCJOB = ("batch.volcano.sh/v1alpha1", "Job")
PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
QUEUE = ("scheduling.volcano.sh/v1beta1", "Queue")


def pods_of(real, job: str) -> dict[str, dict]:
    pods = real.admin.get(real.url("v1", "Pod"))["items"]
    return {obj["metadata"]["name"]: obj for obj in pods
            if (obj["metadata"].get("labels") or {}).get("volcano.sh/job-name") == job}


def kubelet(real, job: str, phase: str) -> None:
    """What the kubelet would report: every bound pod of the job in `phase`."""
    for name, obj in pods_of(real, job).items():
        if obj["spec"].get("nodeName"):
            real.kube.merge_patch(path(CORE, "pods", real.namespace, name, "status"), {"status": {"phase": phase}})


def events(real, *reasons: str) -> list[dict]:
    return [e for e in real.events() if not reasons or e["reason"] in reasons]


def job_podgroup(real, job: str) -> dict | None:
    """The Job's PodGroup, `<job>-<job uid>` as Volcano names it."""
    uid = real.get(*VCJOB, job)["metadata"]["uid"]
    return real.get(*PODGROUP, f"{job}-{uid}")


def commands(real, namespace: str) -> list[dict]:
    return real.admin.get(path(VOLCANO_BUS, "commands", namespace))["items"]


def test_job_runs_to_completion(real, cluster):
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), vcjob("train"))
    eventually(lambda: job_podgroup(real, "train"), what="the PodGroup")
    eventually(lambda: len(pods_of(real, "train")) == 2 and all(
        p["spec"].get("nodeName") for p in pods_of(real, "train").values()), what="pods created and bound")
    assert sorted(pods_of(real, "train")) == ["train-worker-0", "train-worker-1"]
    kubelet(real, "train", "Running")
    eventually(lambda: cluster("train") == "Running", what="the job Running")
    kubelet(real, "train", "Succeeded")
    eventually(lambda: cluster("train") == "Completed", what="the job Completed")
    status = real.get(*VCJOB, "train")["status"]
    assert status["succeeded"] == 2


def test_suspend_and_resume_through_the_cli(real, cluster, capsys):
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), vcjob("train"))
    eventually(lambda: len(pods_of(real, "train")) == 2 and all(
        p["spec"].get("nodeName") for p in pods_of(real, "train").values()), what="pods bound")
    kubelet(real, "train", "Running")
    eventually(lambda: cluster("train") == "Running", what="Running")
    assert main(["job", "suspend", "-N", "train", "-n", real.namespace, "--kubeconfig", real.kubeconfig]) == 0
    eventually(lambda: cluster("train") == "Aborted", what="Aborted")
    assert not pods_of(real, "train") and not commands(real, real.namespace)  # pods gone, Command consumed

    def event_types() -> dict[str, str]:  # Events are written by their own worker: wait for them
        return {e["message"].split(":")[0]: e["type"] for e in events(real)
                if e["involvedObject"]["kind"] == "Job"}

    # the user asked for it: Normal, not a Warning as an abort by a policy is
    eventually(lambda: event_types().get("Aborting -> Aborted") == "Normal", what="a Normal Event for the suspend")
    assert event_types().get("Pending -> Running") == "Normal"
    assert main(["job", "resume", "-N", "train", "-n", real.namespace, "--kubeconfig", real.kubeconfig]) == 0
    eventually(lambda: len(pods_of(real, "train")) == 2, what="pods again after resume")
    assert cluster("train") in ("Restarting", "Pending", "Running")


def test_api_failures_are_retried(real, cluster):
    real.proxy.fail("create", "pods", times=3, code=500, namespace=real.namespace)
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), vcjob("train", replicas=1))
    eventually(lambda: pods_of(real, "train"), what="the pod despite three refused creates")
    assert real.proxy.count("create", "pods", real.namespace) == 4


def test_a_status_write_refused_by_a_conflict_tells_its_events_once(real, cluster):
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), vcjob("train", replicas=1))
    eventually(lambda: pods_of(real, "train") and all(
        p["spec"].get("nodeName") for p in pods_of(real, "train").values()), what="the pod bound")
    real.proxy.fail("update", "jobs/status", times=1, code=409, namespace=real.namespace)
    kubelet(real, "train", "Running")
    eventually(lambda: cluster("train") == "Running", what="Running despite one refused status write")
    assert real.proxy.count("update", "jobs/status", real.namespace) >= 2

    def told() -> list[int]:
        return [int(e.get("count") or 1) for e in events(real) if e["message"].startswith("Pending -> Running")]

    eventually(lambda: told(), what="the Running Event")
    time.sleep(1)  # a second telling would follow the retried write at once
    assert told() == [1]


@pytest.fixture
def queue_controller(real):
    kube = real.kube
    stop = threading.Event()
    controller = QueueController(kube, EventRecorder(kube, "vc-controller-manager"))
    thread = threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True)
    thread.start()
    yield controller
    stop.set()
    thread.join(10)


def test_the_queue_controller_writes_its_status_fields_alone(real, queue_controller):
    """One writer per field of a Queue's status: the controller's counts never write back the
    scheduler's `allocated`, and neither writes the whole status (no conflicts to retry)."""
    puts = real.proxy.count("update", "queues/status")
    real.put(queue("shared", weight=1))
    eventually(lambda: ((real.get(*QUEUE, "shared") or {}).get("status") or {}).get("state") == "Open",
               what="shared Open")
    real.kube.merge_patch(path(VOLCANO_SCHEDULING, "queues", None, "shared", "status"),
                          {"status": {"allocated": {"cpu": "3"}}})  # as the scheduler's sink writes it
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "pg-shared"}, "spec": {"minMember": 1, "queue": "shared"},
             "status": {"phase": "Running"}})
    eventually(lambda: real.get(*QUEUE, "shared")["status"].get("running") == 1, what="the count")
    assert real.get(*QUEUE, "shared")["status"]["allocated"] == {"cpu": "3"}
    assert real.proxy.count("update", "queues/status") == puts


def test_queue_close_through_the_cli_cascades_and_reopens(real, queue_controller):
    def state(name: str) -> str:
        return ((real.get(*QUEUE, name) or {}).get("status") or {}).get("state", "")

    real.put(queue("research", weight=1))
    real.put(queue("vision", parent="research", weight=1))
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "pg"}, "spec": {"minMember": 1, "queue": "vision"},
             "status": {"phase": "Running"}})
    eventually(lambda: state("research") == "Open" and state("vision") == "Open", what="queues Open")
    assert real.get(*QUEUE, "vision")["status"]["running"] == 1

    assert main(["queue", "operate", "-n", "research", "-a", "close", "--kubeconfig", real.kubeconfig]) == 0
    eventually(lambda: state("research") == "Closed", what="research Closed")
    eventually(lambda: state("vision") == "Closing", what="vision Closing while its PodGroup runs")
    annotations = real.get(*QUEUE, "vision")["metadata"]["annotations"]
    assert annotations["volcano.sh/closed-by-parent"] == "true"
    eventually(lambda: not commands(real, "default"), what="the Command consumed")  # a Queue's go there

    real.kube.merge_patch(path(VOLCANO_SCHEDULING, "podgroups", real.namespace, "pg"),
                     {"status": {"phase": "Completed"}})
    eventually(lambda: state("vision") == "Closed", what="vision Closed once drained")

    assert main(["queue", "operate", "-n", "research", "-a", "open", "--kubeconfig", real.kubeconfig]) == 0
    eventually(lambda: state("research") == "Open" and state("vision") == "Open", what="both reopened")


def test_plain_pods_get_a_podgroup(real):
    template = pod("web")
    template["metadata"] = {"labels": {"app": "web"}}
    owner = real.put({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                      "metadata": {"name": "web", "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
                      "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template}})
    real.put(pod("other", scheduler="default-scheduler"))
    stop = threading.Event()
    controller = PodGroupController(real.kube, EventRecorder(real.kube, "vc-controller-manager"))
    thread = threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True)
    thread.start()
    group = f"podgroup-{owner['metadata']['uid']}"

    def web_groups() -> list[str | None]:  # the ReplicaSet controller creates the pods
        return [(p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
                for p in real.admin.get(real.url("v1", "Pod"))["items"] if p["metadata"]["name"] != "other"]

    try:
        eventually(lambda: web_groups() == [group, group], what="annotations")
    finally:
        stop.set()
        thread.join(10)
    podgroup = real.get(*PODGROUP, group)
    assert podgroup["spec"]["minMember"] == 2 and podgroup["spec"]["minResources"] == {"cpu": "2"}
    # one for the ReplicaSet, none for `other`
    assert [g["metadata"]["name"] for g in real.admin.get(real.url(*PODGROUP))["items"]] == [group]


def test_a_volume_claim_is_created_owned_by_the_job_and_mounted(real, cluster):
    job = vcjob("train", replicas=1)
    job["spec"]["volumes"] = [{"mountPath": "/ckpt", "volumeClaim": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        {"mountPath": "/data", "volumeClaimName": "shared"}]
    real.put({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "shared"},
              "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "1Gi"}}}})
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), job)
    claim = eventually(lambda: real.get("v1", "PersistentVolumeClaim", "train-volume-0"), what="the PVC")
    job_uid = real.get(*VCJOB, "train")["metadata"]["uid"]
    assert [(o["kind"], o["uid"]) for o in claim["metadata"]["ownerReferences"]] == [("Job", job_uid)]
    [pod] = eventually(lambda: list(pods_of(real, "train").values()), what="the pod")
    volumes = pod["spec"]["volumes"]
    assert {"name": "train-volume-0", "persistentVolumeClaim": {"claimName": "train-volume-0"}} in volumes
    assert {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}} in volumes  # used as is
    assert real.get("v1", "PersistentVolumeClaim", "shared")["metadata"].get("ownerReferences") is None


def test_a_missing_claim_is_retried_boundedly_then_the_job_is_terminated(real):
    kube = real.kube
    job = vcjob("train", replicas=1)
    job["spec"]["volumes"] = [{"mountPath": "/data", "volumeClaimName": "absent"}]
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), job)
    controller = JobController(kube, EventRecorder(kube, "vc-controller-manager"), workers=1)
    controller.queue = WorkQueue(base_delay=0.001, max_delay=0.01)  # Volcano's backoff, compressed
    stop = threading.Event()
    thread = threading.Thread(target=run_controllers, args=([controller], stop, None), daemon=True)
    thread.start()
    try:
        eventually(lambda: ((real.get(*VCJOB, "train").get("status") or {}).get("state") or {})
                   .get("phase") in ("Terminating", "Terminated"), what="the job terminated")
    finally:
        stop.set()
        thread.join(10)
    assert not pods_of(real, "train") and job_podgroup(real, "train") is None
    eventually(lambda: {"ExecuteAction", "PVCError"} <= {e["reason"] for e in events(real)}, what="the Events")
    for event in events(real):
        if event["reason"] in ("ExecuteAction", "PVCError"):
            assert "pvc absent is not found" in event["message"] and event["type"] == "Warning"


def test_scaling_updates_the_podgroup_and_the_svc_host_lists(real, cluster):
    kube = real.kube
    job = vcjob("train", replicas=2)
    job["spec"]["plugins"] = {"svc": ["--disable-network-policy"]}
    real.kube.create(path(VOLCANO_BATCH, "jobs", real.namespace), job)
    eventually(lambda: len(pods_of(real, "train")) == 2, what="two pods")

    def scale(replicas: int) -> bool:
        current = kube.get(path(VOLCANO_BATCH, "jobs", real.namespace, "train"))
        current["spec"]["minAvailable"] = replicas
        current["spec"]["tasks"][0].update(replicas=replicas, minAvailable=replicas)
        try:
            kube.request("PUT", path(VOLCANO_BATCH, "jobs", real.namespace, "train"), body=current)
            return True
        except ApiError as err:  # the controller wrote the job's status meanwhile: as kubectl, read again
            if err.code != 409:
                raise
            return False

    def hosts() -> str:  # rewritten in place on a scale
        configmap = real.get("v1", "ConfigMap", "train-svc") or {"data": {}}
        return configmap["data"].get("VC_WORKER_HOSTS", "")

    eventually(lambda: scale(3), what="scaled to 3")
    eventually(lambda: len(pods_of(real, "train")) == 3, what="three pods")
    eventually(lambda: hosts().count(",") == 2, what="three hosts")
    spec = job_podgroup(real, "train")["spec"]
    assert (spec["minMember"], spec["minTaskMember"], spec["minResources"]) == (
        3, {"worker": 3}, {"count/pods": "3", "cpu": "3", "pods": "3", "requests.cpu": "3"})
    eventually(lambda: scale(1), what="scaled to 1")
    eventually(lambda: hosts() == "train-worker-0.train", what="one host")
    eventually(lambda: job_podgroup(real, "train")["spec"]["minMember"] == 1, what="minMember 1")
    assert job_podgroup(real, "train")["spec"]["minTaskMember"] == {"worker": 1}
    # made with the job, rewritten in place once per scale: never read, never deleted, never rewritten unchanged
    assert [real.proxy.count(verb, "configmaps") for verb in ("create", "update", "delete")] == [1, 2, 0]


def test_workers_do_not_outlive_run_controllers():
    """On stop, each worker finishes the key it holds and takes no other; run_controllers
    returns only once every worker has ended (none acts after the process gave up its lease)."""
    from central.controllers.loops.base import ControllerLoop

    class Held(ControllerLoop):
        name = "held"

        def __init__(self):
            super().__init__(None, None, workers=2)
            self.release = threading.Event()
            self.busy, self.done = [], []

        def sync(self, key):
            self.busy.append(key)
            self.release.wait(30)
            self.done.append(key)

    loop = Held()
    for key in "abcdef":
        loop.queue.add(key)
    stop, leading = threading.Event(), threading.Event()
    runner = threading.Thread(target=run_controllers, args=([loop], stop, None, leading), daemon=True)
    runner.start()
    eventually(lambda: len(loop.busy) == 2, what="both workers holding a key")
    assert leading.is_set()  # what caldera_controllers_leader reports
    stop.set()
    eventually(lambda: loop.queue._closed, what="the loop stopping")
    loop.release.set()  # the held syncs end now; before, they outlived run_controllers and drained the queue
    runner.join(10)
    assert not runner.is_alive()
    assert not any(thread.is_alive() for thread in loop._threads)  # run_controllers waited for them
    assert sorted(loop.done) == sorted(loop.busy) == ["a", "b"]  # the other four were never taken
    assert not leading.is_set()


def test_a_jobs_pods_are_written_concurrently_within_their_bounds():
    controller = JobController(None, None, pod_writers=8, pod_writers_per_job=3)
    lock, running, most, written = threading.Lock(), [0], [0], []

    def write(item):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
            written.append(item)
        if item in (4, 7):
            raise ApiError(500, "InternalError", f"pod {item} refused")

    with pytest.raises(ApiError, match="pod 4 refused"):  # every item tried, the first error raised after
        controller._each(write, list(range(10)))
    assert sorted(written) == list(range(10)) and most[0] == 3
    controller.stop(1)


def test_jobs_writing_at_once_share_the_overall_bound():
    controller = JobController(None, None, pod_writers=4, pod_writers_per_job=3)
    lock, running, most = threading.Lock(), {"a": 0, "b": 0}, {"a": 0, "b": 0, "all": 0}

    def writer(job_key):
        def write(_):
            with lock:
                running[job_key] += 1
                most[job_key] = max(most[job_key], running[job_key])
                most["all"] = max(most["all"], running["a"] + running["b"])
            time.sleep(0.03)
            with lock:
                running[job_key] -= 1
        return write

    threads = [threading.Thread(target=controller._each, args=(writer(k), list(range(12)))) for k in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most["a"] <= 3 and most["b"] <= 3  # one job never holds more than its share
    assert most["all"] == 4  # both jobs' pods in flight together, never more than the pool
    controller.stop(1)


def test_a_jobs_pods_are_deleted_before_any_is_created_and_a_failed_create_writes_no_status():
    from central.controllers.jobs import JobDecision

    controller = JobController(None, None, pod_writers=8, pod_writers_per_job=4)
    lock, calls = threading.Lock(), []

    def delete_pod(namespace, name):
        time.sleep(0.02)
        with lock:
            calls.append(("delete", name))

    def create(obj):
        with lock:
            calls.append(("create", obj["metadata"]["name"]))
        if obj["metadata"]["name"] == "j-w-2":
            raise ApiError(403, "Forbidden", "exceeded quota")
        return True

    controller._delete_own_pod = delete_pod
    controller.create = create
    controller.write_status = lambda *args: calls.append(("status",))
    decision = JobDecision(status={"state": {"phase": "Running"}}, status_changed=True,
                           create_pods=[{"kind": "Pod", "metadata": {"name": f"j-w-{i}"}} for i in range(6)],
                           delete_pods=[f"j-old-{i}" for i in range(6)], events=[("Started", "x")])
    with pytest.raises(ApiError, match="exceeded quota"):  # raised as one by one did: the retry decides again
        controller._apply({"metadata": {"namespace": "ns", "name": "j"}}, decision)
    kinds = [c[0] for c in calls]
    assert kinds == ["delete"] * 6 + ["create"] * 6  # every pod tried; no status, no Event told
    controller.stop(1)
