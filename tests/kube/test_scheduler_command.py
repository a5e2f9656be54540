"""`caldera scheduler` as a process: schedules, serves probes, releases its Lease on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.builders import node, pod
from tests.ports import free_port
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
LEASE = ("coordination.k8s.io/v1", "Lease")
PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def test_scheduler_process_binds_and_releases_its_lease_on_sigterm(real, tmp_path):
    real.put(node("n1", pods=10))
    real.put(pod("p0"))
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n')
    real.put(pod("sched-0", scheduler="default-scheduler"))  # its own pod
    port = free_port()
    log = tmp_path / "scheduler.log"
    proc = start(["scheduler", "--kubeconfig", real.kubeconfig, "--scheduler-conf", str(conf),
                  "--lock-object-namespace", real.namespace, "--schedule-period", "0.1", "--listen-port", str(port),
                  "--leader-elect-retry-period", "0.2"], log, POD_NAME="sched-0", POD_NAMESPACE=real.namespace)
    try:
        eventually(lambda: running(proc) and (real.pod("p0") or {}).get("spec", {}).get("nodeName"),
                   timeout=90, what="the process binding the pod")
        assert answers(f"http://127.0.0.1:{port}/readyz")
        assert real.get(*LEASE, "vc-scheduler")["spec"]["holderIdentity"]
        assert own_label(real) == "true"  # the agents' Service now selects this pod
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        print(log.read_text()[-5000:])  # pytest shows it where the test fails
    assert proc.returncode == 0
    assert real.get(*LEASE, "vc-scheduler")["spec"]["holderIdentity"] == ""
    assert own_label(real) == "false"


def start(argv: list[str], log: Path, **env: str) -> subprocess.Popen[bytes]:
    """`caldera ARGV` as a process writing to `log`: a pipe nobody reads until the end would
    stall it once full."""
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "caldera", *argv],
                                env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
                                stdout=out, stderr=subprocess.STDOUT)


def running(proc: subprocess.Popen[bytes]) -> bool:
    """True while `proc` runs; its exit fails the test at once."""
    if proc.poll() is not None:
        raise AssertionError(f"the process exited ({proc.returncode}); its log is printed below")
    return True


def own_label(real) -> str | None:
    return (real.pod("sched-0")["metadata"].get("labels") or {}).get(
        "caldera.sh/leader")


def test_agent_stream_without_tls_must_be_asked_for(real):
    result = subprocess.run([sys.executable, "-m", "caldera", "scheduler", "--kubeconfig", real.kubeconfig,
                             "--agent-address", "127.0.0.1:0"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--agent-tls-dir" in result.stderr and "Traceback" not in result.stderr


def test_invalid_config_at_start_is_one_line_exit_2(real, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text('actions: "allocate, dance"\n')
    result = subprocess.run([sys.executable, "-m", "caldera", "scheduler", "--kubeconfig", real.kubeconfig,
                             "--scheduler-conf", str(conf)], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "dance" in result.stderr and "Traceback" not in result.stderr


def test_controllers_process_creates_a_jobs_podgroup_and_releases_its_lease(real, tmp_path):
    from central.admission.jobs import mutate_job

    uid = real.put(mutate_job({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                        "metadata": {"name": "train", "namespace": real.namespace},
                        "spec": {"tasks": [{"name": "w", "replicas": 1, "template": {
                            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}))["metadata"]["uid"]
    log = tmp_path / "controllers.log"
    proc = start(["controllers", "--kubeconfig", real.kubeconfig, "--lock-object-namespace", real.namespace,
                  "--listen-port", str(free_port())], log)
    try:
        eventually(lambda: running(proc) and real.get(*PODGROUP, f"train-{uid}"), timeout=90,
                   what="the PodGroup")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        print(log.read_text()[-5000:])  # pytest shows it where the test fails
    assert proc.returncode == 0
    assert real.get(*LEASE, "vc-controller-manager")["spec"]["holderIdentity"] == ""


def test_a_renew_deadline_past_the_lease_duration_is_refused(real):
    result = subprocess.run([sys.executable, "-m", "caldera", "scheduler", "--kubeconfig", real.kubeconfig,
                             "--leader-elect-lease-duration", "10", "--leader-elect-renew-deadline", "15"],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--leader-elect-renew-deadline" in result.stderr and "Traceback" not in result.stderr
