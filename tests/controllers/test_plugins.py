"""Job plugins: what each injects into pods, and the objects it creates."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from central.admission.jobs import mutate_job
from central.controllers.jobplugins import apply_plugins, deleted_objects, job_objects
from central.errors import InputError
from central.model.jobs import expand_job
from tests.builders import job, task
from tests.controllers.fakeloop import FakeCluster


def pods_of(
    spec_plugins: dict[str, list[str]], tasks: list[dict[str, Any]] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    j = mutate_job(job(tasks=tasks, plugins=spec_plugins))
    j["spec"]["tasks"][0]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    _, pods = expand_job(j)
    return j, {p["metadata"]["name"]: p for p in apply_plugins(j, pods)}


def env(pod: dict[str, Any], container: int = 0, init: bool = False) -> dict[str, str]:
    c = pod["spec"]["initContainers" if init else "containers"][container]
    return {e["name"]: e["value"] for e in c.get("env") or []}


def test_env_plugin_sets_the_task_index_everywhere() -> None:
    _, pods = pods_of({"env": []})
    assert env(pods["train-worker-1"]) == {"VK_TASK_INDEX": "1", "VC_TASK_INDEX": "1"}
    assert env(pods["train-ps-0"], init=True) == {"VK_TASK_INDEX": "0", "VC_TASK_INDEX": "0"}


def test_svc_plugin_pods() -> None:
    _, pods = pods_of({"svc": []})
    pod = pods["train-worker-1"]
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("train-worker-1", "train")
    assert {"name": "train-svc", "mountPath": "/etc/volcano"} in pod["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "train-svc", "configMap": {"name": "train-svc"}} in pod["spec"]["volumes"]
    assert env(pod) == {
        "VC_PS_HOSTS": "train-ps-0.train",
        "VC_PS_NUM": "1",
        "VC_WORKER_HOSTS": "train-worker-0.train,train-worker-1.train",
        "VC_WORKER_NUM": "2",
    }


def test_svc_plugin_objects() -> None:
    j, _ = pods_of({"svc": []})
    objects = {o["kind"]: o for o in job_objects(j)}
    assert set(objects) == {"ConfigMap", "Service", "NetworkPolicy"}
    assert objects["ConfigMap"]["metadata"]["name"] == "train-svc"
    assert objects["ConfigMap"]["data"]["worker.host"] == "train-worker-0.train\ntrain-worker-1.train"
    assert objects["ConfigMap"]["data"]["VC_WORKER_NUM"] == "2"
    service = objects["Service"]
    assert service["metadata"]["name"] == "train" and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"volcano.sh/job-name": "train", "volcano.sh/job-namespace": "ml"}
    assert service["spec"]["publishNotReadyAddresses"] is False
    assert objects["NetworkPolicy"]["spec"]["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": service["spec"]["selector"]}}]}
    ]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == j["metadata"].get("uid", "") for o in objects.values())


def test_svc_plugin_flags() -> None:
    j, pods = pods_of(
        {"svc": ["--publish-not-ready-addresses", "--disable-network-policy", "--inject-hosts-env=false"]}
    )
    kinds = {o["kind"]: o for o in job_objects(j)}
    assert "NetworkPolicy" not in kinds and kinds["Service"]["spec"]["publishNotReadyAddresses"] is True
    assert env(pods["train-ps-0"]) == {}


def test_ssh_plugin() -> None:
    j, pods = pods_of({"ssh": []})
    (secret,) = job_objects(j)
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == "train-ssh"
    files = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    key = serialization.load_ssh_private_key(files["id_rsa"].encode(), password=None)
    assert key.key_size == 2048
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    assert files["id_rsa.pub"] == files["authorized_keys"] == public
    assert "StrictHostKeyChecking no" in files["config"]
    assert "Host train-worker-1\n  HostName train-worker-1.train\n  Port 22" in files["config"]
    pod = pods["train-ps-0"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "train-ssh")
    assert volume["secret"]["secretName"] == "train-ssh" and volume["secret"]["defaultMode"] == 0o600
    assert all(item["mode"] == 0o600 for item in volume["secret"]["items"])
    for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
        assert {"name": "train-ssh", "mountPath": "/root/.ssh"} in c["volumeMounts"]
    assert deleted_objects(j) == [("Secret", "train-ssh")]


def test_ssh_plugin_with_given_keys_and_path() -> None:
    j, pods = pods_of(
        {"ssh": ["--ssh-private-key=PRIVATE", "--ssh-public-key=PUBLIC", "--ssh-key-file-path=/home/mpi/.ssh"]}
    )
    data = job_objects(j)[0]["data"]
    assert base64.b64decode(data["id_rsa"]) == b"PRIVATE" and base64.b64decode(data["authorized_keys"]) == b"PUBLIC"
    assert {"name": "train-ssh", "mountPath": "/home/mpi/.ssh"} in pods["train-ps-0"]["spec"]["containers"][0][
        "volumeMounts"
    ]


def test_pytorch_plugin() -> None:
    tasks = [task("master"), task("worker", 3)]
    _, pods = pods_of({"pytorch": ["--port=23456"]}, tasks)
    assert env(pods["train-master-0"])["RANK"] == "0"
    worker = env(pods["train-worker-2"])
    assert {k: worker[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
        "MASTER_ADDR": "train-master-0.train",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "4",
        "RANK": "3",
    }
    assert {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"} in pods["train-worker-0"]["spec"][
        "containers"
    ][0]["ports"]


def test_tensorflow_plugin() -> None:
    tasks = [task("ps"), task("worker", 2), task("chief")]
    _, pods = pods_of({"tensorflow": []}, tasks)
    config = json.loads(env(pods["train-worker-1"])["TF_CONFIG"])
    assert config == {
        "cluster": {
            "ps": ["train-ps-0.train:2222"],
            "worker": ["train-worker-0.train:2222", "train-worker-1.train:2222"],
            "chief": ["train-chief-0.train:2222"],
        },
        "task": {"type": "worker", "index": 1},
    }
    assert json.loads(env(pods["train-chief-0"])["TF_CONFIG"])["task"] == {"type": "chief", "index": 0}


def test_tensorflow_plugin_skips_a_single_pod() -> None:
    _, pods = pods_of({"tensorflow": []}, [task("worker")])
    assert "TF_CONFIG" not in env(pods["train-worker-0"])


def test_mpi_plugin() -> None:
    tasks = [task("master"), task("worker", 2)]
    _, pods = pods_of({"mpi": []}, tasks)
    assert env(pods["train-master-0"])["MPI_HOST"] == "train-worker-0.train,train-worker-1.train"
    assert "MPI_HOST" not in env(pods["train-worker-0"])
    assert {"name": "mpijob-port", "containerPort": 22, "protocol": "TCP"} in pods["train-worker-1"]["spec"][
        "containers"
    ][0]["ports"]
    # the webhook added svc and ssh
    assert pods["train-worker-1"]["spec"]["subdomain"] == "train"
    assert any(v["name"] == "train-ssh" for v in pods["train-master-0"]["spec"]["volumes"])


def test_ray_plugin() -> None:
    tasks = [task("head"), task("worker", 2)]
    for t in tasks:
        t["template"]["spec"]["containers"][0]["name"] = t["name"]
    j, pods = pods_of({"ray": []}, tasks)
    head = pods["train-head-0"]["spec"]["containers"][0]
    assert head["command"] == ["sh", "-c", "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 "
                                           "--dashboard-port=8265 --ray-client-server-port=10001"]
    assert [(p["name"], p["containerPort"]) for p in head["ports"]] == [
        ("gcs", 6379), ("dashboard", 8265), ("client-server", 10001)]
    worker = pods["train-worker-1"]["spec"]["containers"][0]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=train-head-0.train:6379"]
    assert pods["train-worker-1"]["spec"]["subdomain"] == "train"  # the webhook added svc
    service = next(o for o in job_objects(j) if o["metadata"]["name"] == "train-head-svc")
    assert service["spec"]["selector"]["volcano.sh/task-spec"] == "head"
    assert [p["port"] for p in service["spec"]["ports"]] == [6379, 8265, 10001]
    assert ("Service", "train-head-svc") in deleted_objects(j)


def test_ray_plugin_leaves_other_containers_alone() -> None:
    _, pods = pods_of({"ray": ["--headContainer=ray"]}, [task("head"), task("worker")])
    assert "command" not in pods["train-head-0"]["spec"]["containers"][0]


def test_hcclrank_plugin() -> None:
    tasks = [task("master", 2), task("worker", 3), task("other")]
    tasks[1]["template"]["spec"]["containers"][0]["env"] = []
    _, pods = pods_of({"hcclrank": []}, tasks)
    ranks = {name: p["metadata"]["annotations"].get("hccl/rankIndex") for name, p in pods.items()}
    assert ranks == {"train-master-0": "0", "train-master-1": "1", "train-worker-0": "2", "train-worker-1": "3",
                     "train-worker-2": "4", "train-other-0": None}


def test_hcclrank_plugin_takes_the_rank_env_first() -> None:
    tasks = [task("master"), task("worker")]
    tasks[1]["template"]["spec"]["containers"][0]["env"] = [{"name": "RANK", "value": "7"}]
    _, pods = pods_of({"hcclrank": []}, tasks)
    assert pods["train-worker-0"]["metadata"]["annotations"]["hccl/rankIndex"] == "7"


@pytest.mark.parametrize(
    "plugins, message",
    [
        pytest.param({"svc": ["--nope"]}, 'unknown flag "--nope"', id="unknown-flag"),
        pytest.param({"svc": ["--disable-network-policy=maybe"]}, "expects true or false", id="bad-bool"),
        pytest.param({"mpi": ["--port"]}, "flag --port needs a value", id="missing-value"),
        pytest.param({"gloo": []}, 'unable to find job plugin "gloo"', id="unknown-plugin"),
    ],
)
def test_bad_plugin_arguments_raise(plugins: dict[str, list[str]], message: str) -> None:
    with pytest.raises(InputError, match=message):
        apply_plugins({"metadata": {"name": "j"}, "spec": {"plugins": plugins, "tasks": []}}, [])


# Every flag of every job plugin Volcano has (pkg/controllers/job/plugins: each addFlags).
VOLCANO_FLAGS = {
    "env": [],
    "svc": ["--publish-not-ready-addresses", "--disable-network-policy=true", "--inject-hosts-env=false"],
    "ssh": ["--ssh-key-file-path=/home/u/.ssh", "--ssh-private-key=K", "--ssh-public-key=P", "--ssh-port=2222"],
    "pytorch": ["--master=master", "--worker=worker", "--port=29500", "--wait-master-enabled",
                "--wait-master-timeout=60", "--wait-master-image=busybox:1.37"],
    "tensorflow": ["--ps=ps", "--worker=worker", "--chief=chief", "--evaluator=evaluator", "--port=2222"],
    "mpi": ["--master=master", "--worker=worker", "--port=2222"],
    "ray": ["--head=head", "--headContainer=head", "--worker=worker", "--workerContainer=worker", "--port=6380",
            "--dashboardPort=8266", "--clientPort=10002"],
    "hcclrank": ["--master=master", "--worker=worker"],
}


@pytest.mark.parametrize("name", sorted(VOLCANO_FLAGS))
def test_every_flag_of_volcanos_job_plugins_is_accepted(name: str) -> None:
    tasks = [task("master"), task("worker"), task("head")] + ([task("ps")] if name == "tensorflow" else [])
    _, pods = pods_of({name: VOLCANO_FLAGS[name]}, tasks)
    assert pods


def test_flags_volcano_ignores_are_accepted_without_effect() -> None:
    """ssh --no-root (removed from Volcano in 2020) and svc --enable-networking (never a flag)
    are in Volcano's own suites; its flag parser skips them, so the job runs as without them."""
    plain_job, plain = pods_of({"svc": [], "ssh": ["--ssh-private-key=K", "--ssh-public-key=P"]})
    with_job, ignored = pods_of({"svc": ["--enable-networking"],
                                 "ssh": ["--no-root", "--ssh-private-key=K", "--ssh-public-key=P"]})
    assert ignored == plain
    assert job_objects(with_job) == job_objects(plain_job)


@pytest.mark.parametrize(("value", "expected"), [("t", True), ("T", True), ("TRUE", True), ("True", True),
                                                 ("1", True), ("f", False), ("F", False), ("FALSE", False)])
def test_boolean_flags_take_gos_spellings(value: str, expected: bool) -> None:
    j, _ = pods_of({"svc": [f"--disable-network-policy={value}"]})
    has_policy = any(o["kind"] == "NetworkPolicy" for o in job_objects(j))
    assert has_policy is not expected


def test_pytorch_workers_wait_for_the_master_when_asked() -> None:
    tasks = [task("master"), task("worker", 2)]
    _, pods = pods_of({"pytorch": ["--wait-master-enabled", "--wait-master-timeout=60", "--port=29500"]}, tasks)
    waits = [c for c in pods["train-worker-1"]["spec"]["initContainers"] if c["name"] == "wait-for-master"]
    assert len(waits) == 1 and waits[0]["image"] == "busybox:1.36.1" and waits[0]["command"][:2] == ["sh", "-c"]
    assert "nc -z train-master-0.train 29500" in waits[0]["command"][2] and "TIMEOUT=60" in waits[0]["command"][2]
    assert all(c["name"] != "wait-for-master" for c in pods["train-master-0"]["spec"]["initContainers"])
    _, plain = pods_of({"pytorch": []}, tasks)
    assert all(c["name"] != "wait-for-master" for c in plain["train-worker-1"]["spec"].get("initContainers", []))


def test_unknown_flag_is_refused_with_the_known_ones() -> None:
    with pytest.raises(InputError, match="known flags: --ssh-key-file-path, --ssh-private-key, --ssh-public-key, --ssh-port"):
        pods_of({"ssh": ["--no-such-flag"]})
    with pytest.raises(InputError, match="wait-master-timeout must be a number of seconds"):
        pods_of({"pytorch": ["--wait-master-timeout=soon"]}, [task("master"), task("worker")])


def test_controller_creates_plugin_objects_once_and_deletes_them_when_stopping() -> None:
    c = FakeCluster(job(tasks=[task("master"), task("worker", 2)], plugins={"mpi": []}))
    first = c.step()
    assert sorted(o["kind"] for o in first.create_objects) == ["ConfigMap", "NetworkPolicy", "Secret", "Service"]
    assert c.status["controlledResources"] == {"plugin-mpi": "mpi", "plugin-ssh": "ssh", "plugin-svc": "svc"}
    assert c.step().create_objects == []  # the ssh key is generated once
    c.enqueue()
    c.step()
    assert c.pods["train-master-0"]["spec"]["subdomain"] == "train"
    c.set_phase("Succeeded")
    c.settle()
    assert c.phase == "Completed" and c.objects == {}
