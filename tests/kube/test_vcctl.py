"""vcctl-compatible commands through `caldera ...` on a real kube-apiserver."""

from __future__ import annotations

import json

import pytest
import yaml

from central.cli import main
from central.kube.client import VOLCANO_BATCH, VOLCANO_BUS, path
from tests.builders import pod


@pytest.fixture
def caldera(real, capsys):
    def call(*argv: str) -> tuple[int, str, str]:
        if argv[0] in ("job", "pod") and not {"-n", "--all-namespaces"} & set(argv):
            argv = (*argv, "-n", real.namespace)  # the test's namespace, not `default`
        code = main([*argv, "--kubeconfig", real.kubeconfig])
        out, err = capsys.readouterr()
        return code, out, err
    return call


VCJOB = ("batch.volcano.sh/v1alpha1", "Job")
QUEUE = ("scheduling.volcano.sh/v1beta1", "Queue")


def commands(real, target: str, namespace: str) -> list[dict]:
    """The Commands aimed at `target` (a Queue's are in `default`), oldest first."""
    items = real.admin.get(path(VOLCANO_BUS, "commands", namespace))["items"]
    return sorted((c for c in items if c["target"]["name"] == target),
                  key=lambda c: int(c["metadata"]["resourceVersion"]))


def test_queue_lifecycle(real, caldera):
    assert caldera("queue", "create", "-n", "research", "-w", "3")[0] == 0
    code, out, _ = caldera("queue", "list")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed"]
    assert row[:25].strip() == "research" and row[25:33].strip() == "3" and row[41:49].strip() == "root"  # vcctl's widths
    assert caldera("queue", "operate", "-n", "research", "-a", "update", "-w", "5")[0] == 0
    code, out, _ = caldera("queue", "get", "-n", "research", "-o", "json")
    assert json.loads(out)["spec"]["weight"] == 5
    assert caldera("queue", "delete", "-n", "research")[0] == 0
    assert real.get(*QUEUE, "research") is None


def test_queue_close_creates_a_command_for_the_controller(real, caldera):
    caldera("queue", "create", "-n", "research")
    code, out, _ = caldera("queue", "operate", "-n", "research", "-a", "close")
    assert (code, out.strip()) == (0, "close queue research successfully")
    [command] = commands(real, "research", "default")
    queue = real.get(*QUEUE, "research")
    assert command["action"] == "CloseQueue"
    assert command["target"]["kind"] == "Queue" and command["target"]["uid"] == queue["metadata"]["uid"]
    assert command["metadata"]["name"].startswith("research-closequeue-")


@pytest.mark.parametrize("argv, where", [
    pytest.param(("queue", "get", "-n", "missing"), 'queues.scheduling.volcano.sh "missing" not found',
                 id="missing-queue"),
    pytest.param(("job", "run", "-N", "j", "-R", "cpu=lots"), "--requests", id="bad-quantity"),
    pytest.param(("job", "run", "-N", "j", "-R", "cpu"), "--requests", id="not-a-pair"),
    pytest.param(("job", "run", "-N", "j", "-m", "3", "-r", "2"), "--min", id="min-above-replicas"),
    pytest.param(("job", "suspend", "-N", "nope"), 'jobs.batch.volcano.sh "nope" not found', id="missing-job"),
    pytest.param(("queue", "create", "-n", "q", "-w", "0"), "--weight", id="zero-weight"),
    pytest.param(("queue", "create", "-n", "q", "-p", "nosuch"), "spec.parent", id="unknown-parent-queue"),
    pytest.param(("job", "run", "-N", "Bad_Name"), "Job {namespace}/Bad_Name", id="invalid-job-name"),
])
def test_bad_input_is_one_line_exit_2(real, caldera, argv, where):
    code, out, err = caldera(*argv)
    assert code == 2
    assert where.format(namespace=real.namespace) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_job_run_list_view_suspend_resume_delete(real, caldera):
    code, out, _ = caldera("job", "run", "-N", "train", "-r", "3", "-m", "2", "-i", "nginx", "-R", "cpu=500m")
    assert (code, out.strip()) == (0, "run job train successfully")
    job = real.get(*VCJOB, "train")
    [task] = job["spec"]["tasks"]
    assert (job["spec"]["minAvailable"], job["spec"]["schedulerName"], task["replicas"]) == (2, "volcano", 3)
    assert task["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}
    assert task["template"]["spec"]["containers"][0]["image"] == "nginx"

    code, out, _ = caldera("job", "list")
    header, row = out.splitlines()
    assert header.split()[:6] == ["Name", "Creation", "Phase", "JobType", "Replicas", "Min"]
    # vcctl's columns: no controller runs here, so Phase is empty and Min (the status's) 0, as vcctl shows them
    assert row.split()[0] == "train" and row.split()[2:4] == ["Batch", "3"]
    code, out, _ = caldera("job", "view", "-N", "train", "-o", "yaml")
    assert yaml.safe_load(out)["metadata"]["name"] == "train"
    code, out, _ = caldera("job", "view", "-N", "train")
    assert "Min Available:" in out

    assert caldera("job", "suspend", "-N", "train")[0] == 0
    assert caldera("job", "resume", "-N", "train")[0] == 0
    assert [c["action"] for c in commands(real, "train", real.namespace)] == ["AbortJob", "ResumeJob"]
    assert all(c["target"]["uid"] == job["metadata"]["uid"] for c in commands(real, "train", real.namespace))
    assert caldera("job", "delete", "-N", "train")[0] == 0
    assert real.get(*VCJOB, "train") is None


def test_job_run_refuses_a_closed_queue_as_admission_would(real, caldera, tmp_path):
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "shut"},
             "spec": {"weight": 1}, "status": {"state": "Closed"}})
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                        "metadata": {"name": "j"}, "spec": {"queue": "shut", "tasks": [
                                            {"name": "t", "replicas": 1, "template": {"spec": {"containers": [
                                                {"name": "c", "image": "busybox"}]}}}]}}))
    code, _, err = caldera("job", "run", "-f", str(manifest))
    assert code == 2 and 'spec.queue: can only submit job to queue with state Open; queue "shut" is Closed' in err
    assert not real.admin.get(real.url(*VCJOB))["items"]


def test_job_run_from_file(real, caldera, tmp_path):
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                        "metadata": {"name": "from-file"},
                                        "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {
                                            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}))
    assert caldera("job", "run", "-f", str(manifest), "-n", real.namespace)[0] == 0
    created = real.get(*VCJOB, "from-file")
    assert created["spec"]["tasks"][0]["name"] == "t"
    assert created["spec"]["queue"] == "default"  # defaulted as the webhook does


def test_pod_list_by_job(real, caldera):
    for name, job in (("train-worker-0", "train"), ("other-0", "other")):
        p = pod(name)
        p["metadata"]["labels"] = {"volcano.sh/job-name": job}
        real.put(p)
    real.put(pod("plain"))
    code, out, _ = caldera("pod", "list", "-j", "train")
    header, *rows = out.splitlines()
    assert header.split() == ["Name", "Ready", "Status", "Restart", "Age"]
    assert [r.split()[:3] for r in rows] == [["train-worker-0", "0/1", "Pending"]]
    code, out, _ = caldera("pod", "list", "-o", "json")
    assert sorted(p["metadata"]["name"] for p in json.loads(out)["items"]) == ["other-0", "train-worker-0"]


def test_unreachable_server_is_one_line(caldera):
    code, out, err = caldera("queue", "list", "-s", "http://127.0.0.1:9")
    assert code == 1 and "cannot reach the API server" in err and "Traceback" not in err


@pytest.mark.parametrize("content", [
    pytest.param(None, id="missing-file"),
    pytest.param("{{{\n", id="not-yaml"),
    pytest.param("apiVersion: v1\nkind: Config\n", id="no-context"),
])
def test_bad_kubeconfig_is_one_line_exit_2(tmp_path, capsys, content):
    kubeconfig = tmp_path / "kubeconfig"
    if content is not None:
        kubeconfig.write_text(content)
    assert main(["queue", "list", "--kubeconfig", str(kubeconfig)]) == 2
    err = capsys.readouterr().err
    reason = "no such file" if content is None else "cannot configure"
    assert err.startswith(f"caldera queue: error: --kubeconfig {kubeconfig}: {reason}")
    assert len(err.strip().splitlines()) == 1


def test_version(capsys):
    assert main(["version"]) == 0
    assert "Version:" in capsys.readouterr().out


def test_job_list_across_namespaces_and_by_queue(real, caldera, other_namespace):
    other = other_namespace
    for namespace, queue in ((real.namespace, "default"), (other, "research")):
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
               "spec": {"queue": queue, "minAvailable": 1, "tasks": [{"name": "t", "replicas": 2}]}}
        created = real.admin.create(path(VOLCANO_BATCH, "jobs", namespace), job)
        created["status"] = {"state": {"phase": "Running"}, "running": 2}
        real.admin.request("PUT", path(VOLCANO_BATCH, "jobs", namespace, "j", "status"), body=created)
    code, out, _ = caldera("job", "list", "--all-namespaces")
    header, *rows = out.splitlines()
    assert header.split()[:2] == ["Namespace", "Name"]
    ours = [r.split()[:2] + r.split()[3:4] for r in rows if r.split()[0] in (real.namespace, other)]
    assert ours == [[real.namespace, "j", "Running"], [other, "j", "Running"]]
    code, out, _ = caldera("job", "list", "--all-namespaces", "-q", "research", "-o", "json")
    assert [j["metadata"]["namespace"] for j in json.loads(out)["items"]
            if j["metadata"]["namespace"].startswith(real.namespace)] == [other]
    assert caldera("job", "list", "-n", "empty")[1].strip() == "No resources found"


def _job(real, namespace: str, name: str, labels: dict | None = None) -> None:
    real.admin.create(path(VOLCANO_BATCH, "jobs", namespace), {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "labels": labels or {}},
        "spec": {"queue": "research", "minAvailable": 1, "tasks": [{"name": "t", "replicas": 1}]}})


@pytest.fixture
def other_namespace(real):
    """A second namespace of the test's own (jobs across namespaces)."""
    other = f"{real.namespace}-b"
    real.admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    yield other
    real.admin.delete(f"/api/v1/namespaces/{other}")


def test_global_flags_before_the_command_and_namespace_from_the_context(real, tmp_path, capsys):
    team = real.namespace
    _job(real, team, "mine")
    _job(real, "default", f"other-{team}")  # the shared `default` namespace: removed below
    config = yaml.safe_load(open(real.kubeconfig))
    config["contexts"].append({"name": "team", "context": {"cluster": "proxy", "user": "proxy", "namespace": team}})
    kubeconfig = str(tmp_path / "kubeconfig")
    with open(kubeconfig, "w") as f:
        yaml.safe_dump(config, f)

    def names(*argv: str) -> list[str]:
        assert main(list(argv)) == 0
        return [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]

    try:
        assert f"other-{team}" in names("--kubeconfig", kubeconfig, "job", "list")  # context without a namespace
        assert names("-k", kubeconfig, "--context", "team", "job", "list") == ["mine"]
        assert names(f"--kubeconfig={kubeconfig}", "-n", team, "job", "list") == ["mine"]
        assert f"other-{team}" in names("-k", kubeconfig, "--context", "team", "job", "list", "-n", "default")
    finally:
        real.admin.delete(path(VOLCANO_BATCH, "jobs", "default", f"other-{team}"))


def test_listing_flags_selector_all_namespaces_and_wide(real, caldera, other_namespace):
    _job(real, real.namespace, "one", {"app": "train"})
    _job(real, other_namespace, "two", {"app": "serve"})
    code, out, _ = caldera("job", "list", "-A", "-l", "app=train", "-o", "wide")
    header, *rows = out.splitlines()
    assert code == 0 and header.split()[:2] == ["Namespace", "Name"] and header.split()[-3:] == [
        "Queue", "Scheduler", "Age"]
    assert [r.split()[:2] for r in rows if r.split()[0] in (real.namespace, other_namespace)] == [
        [real.namespace, "one"]]


def test_master_needs_no_kubeconfig(real, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["-s", real.proxy.plain_url, "queue", "list"]) == 0  # as through `kubectl proxy`
    assert "No resources found" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--kubeconfig", "cfg"], ["-n", "x"], ["--bogus", "job", "list"],
                                  ["-n", "x", "simulate"], ["-n", "x", "queue", "list"], []])
def test_misplaced_or_unknown_global_flags_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        code = main(argv)
        raise SystemExit(code)
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_flag(flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([flag])
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("caldera ")


@pytest.mark.parametrize(("argv", "texts"), [
    (["--help"], ["vcctl command line operation job", "Queue Operations", "vcctl command line operation pod"]),
    (["job", "--help"], ["run job by parameters from the command line", "list job information", "show job information",
                         "abort a job", "resume a job", "delete a job"]),
    (["job", "list", "--help"], ["list job information", "list job with specified queue name",
                                 "list job with specified scheduler name", "list jobs in all namespaces",
                                 "(optional) absolute path to the kubeconfig file", "the address of apiserver"]),
    (["job", "suspend", "--help"], ["abort a job", "the name of job"]),
    (["job", "run", "--help"], ["the yaml file of job", "the container image of job", "the resource limit of the task",
                                "the minimal available tasks of job", "the total tasks of job",
                                "the resource request of the task", "the scheduler for this job"]),
    (["queue", "--help"], ["creates queue", "delete queue", "operate queue", "lists all the queue", "get a queue"]),
    (["pod", "--help"], ["list pod information created by vcjob"]),
])
def test_help_uses_vcctls_words_for_the_commands_it_shares(argv, texts, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for text in texts:
        assert text in out, text
