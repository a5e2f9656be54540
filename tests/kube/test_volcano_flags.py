"""`caldera scheduler` and `caldera controllers` take the args Volcano's Helm chart passes
vc-scheduler and vc-controller-manager (installer/helm/chart/volcano/templates/scheduler.yaml
and controllers.yaml at volcano-sh/volcano ed72c7c81, rendered with its values.yaml: the
defaults, then with leader election, pprof and the optional flags turned on)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from central.controllers.loops import command as controllers
from central.errors import InputError
from central.scheduler import command as scheduler

ROOT = Path(__file__).resolve().parents[2]
SCHEDULER_DEFAULTS = [
    "--logtostderr", "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf", "--scheduler-name=volcano",
    "--enable-healthz=true", "--enable-metrics=true", "--leader-elect=false", "--kube-api-qps=2000",
    "--kube-api-burst=2000", "--schedule-period=1s", "--node-worker-threads=20", "-v=3", "2>&1"]
CONTROLLERS_DEFAULTS = [
    "--logtostderr", "--enable-healthz=true", "--enable-metrics=true", "--leader-elect=false",
    "--scheduler-name=volcano", "--kube-api-qps=50", "--kube-api-burst=100", "--worker-threads=3",
    "--worker-threads-for-gc=5", "--worker-threads-for-podgroup=5", "-v=4", "2>&1"]


def parse(module, args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args(args)


def test_the_scheduler_takes_what_volcanos_chart_passes_vc_scheduler():
    args = parse(scheduler, SCHEDULER_DEFAULTS)
    assert (args.config, args.scheduler_name, args.leader_elect, args.period) == (
        "/volcano.scheduler/volcano-scheduler.conf", "volcano", False, 1.0)
    assert (args.kube_api_qps, args.kube_api_burst, args.verbosity) == (2000.0, 2000, 3)
    assert scheduler.volcanoflags.ignored(args, scheduler.VOLCANO_ONLY) == [
        "--logtostderr", "--enable-healthz", "--enable-metrics", "--node-worker-threads"]
    args = parse(scheduler, [
        "--logtostderr", "--enable-pprof=true", "--leader-elect=true", "--leader-elect-resource-namespace=volcano-system",
        "--schedule-period=500ms", "--percentage-nodes-to-find=50", "--feature-gates=SchedulingGatesQueueAdmission=true",
        "--scheduler-sharding-mode=hard", "-v=5", "2>&1"])
    assert (args.leader_elect, args.lock_object_namespace, args.period, args.scheduler_sharding_mode) == (
        True, "volcano-system", 0.5, "hard")
    assert args.verbosity == 5
    assert parse(scheduler, ["--no-leader-elect"]).leader_elect is False
    assert parse(scheduler, []).leader_elect is True  # Caldera's own default


def test_the_controllers_take_what_volcanos_chart_passes_vc_controller_manager():
    args = parse(controllers, CONTROLLERS_DEFAULTS)
    assert (args.leader_elect, args.scheduler_name, args.workers, args.kube_api_qps, args.verbosity) == (
        False, ["volcano"], 3, 50.0, 4)
    assert controllers.chosen_loops(args.controllers) == set(controllers.VOLCANO_NAMES.values())
    args = parse(controllers, [
        "--leader-elect=true", "--leader-elect-resource-namespace=volcano-system",
        "--sharding-configmap=volcano-sharding-configmap", "--sharding-configmap-namespace=volcano-system",
        "--controllers=*,-sharding-controller,-hyperNode-controller", "-v=4", "2>&1"])
    assert (args.leader_elect, args.lock_object_namespace) == (True, "volcano-system")
    assert "sharding-controller" not in controllers.chosen_loops(args.controllers)
    assert "hypernode-controller" not in controllers.chosen_loops(args.controllers)


@pytest.mark.parametrize("gates, name, runs", [
    ("*", "job-controller", True),
    ("*,-job-controller", "job-controller", False),
    ("-sharding-controller, *, -job-controller", "sharding-controller", False),
    ("-sharding-controller, *, -job-controller", "queue-controller", True),
    ("-gc-controller,+jobtemplate-controller,+jobflow-controller,+pg-controller", "pg-controller", True),
    ("+gc-controller,+jobtemplate-controller,+jobflow-controller", "job-controller", False),
    ("", "sharding-controller", True),  # no gates: everything
])
def test_controller_gates_decide_as_volcanos_do(gates, name, runs):
    assert controllers.enabled(name, parse(controllers, [f"--controllers={gates}"]).controllers) is runs


def test_an_unknown_controller_gate_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        parse(controllers, ["--controllers=*,-job-controler"])
    assert "unknown controller 'job-controler'" in capsys.readouterr().err


@pytest.mark.parametrize("module", [scheduler, controllers])
def test_listen_addresses_in_volcanos_host_port_form(module):
    """Volcano's --listen-address names host and port (":8080"); Caldera's named the host alone,
    the port coming from --listen-port; --healthz-address (Volcano's ":11251") adds an address."""
    addresses = module.volcanoflags.serving_addresses
    assert addresses(parse(module, ["--listen-port=9000"])) == [("0.0.0.0", 9000)]
    assert addresses(parse(module, ["--listen-address=127.0.0.1", "--listen-port=9000"])) == [("127.0.0.1", 9000)]
    assert addresses(parse(module, ["--listen-address=:8080", "--listen-port=9000"])) == [("0.0.0.0", 8080)]
    assert addresses(parse(module, ["--listen-address=[::1]:8080", "--healthz-address=:11251"])) == [
        ("::1", 8080), ("0.0.0.0", 11251)]
    with pytest.raises(InputError, match="names no port"):
        addresses(parse(module, ["--healthz-address=127.0.0.1"]))


@pytest.mark.parametrize("value", [":http", "127.0.0.1:70000", "[::1"])
def test_a_listen_address_that_is_not_one_is_refused_by_flag(value, capsys):
    with pytest.raises(SystemExit):
        parse(scheduler, [f"--listen-address={value}"])
    assert "--listen-address" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--plugins-dir=/plugins", "--ignored-provisioners=ebs.csi.aws.com"])
def test_what_caldera_cannot_do_is_refused_in_one_line(flag):
    result = subprocess.run([sys.executable, "-m", "caldera", "scheduler", flag], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert flag.split("=")[0] in result.stderr and "Traceback" not in result.stderr


def test_a_volcano_job_runs_on_processes_started_with_volcanos_chart_args(real, tmp_path):
    """The controllers make a Job's PodGroup and pod, the scheduler binds it: both processes
    started with the chart's default args (the scheduler's conf path, and free ports since two
    processes share this machine, given in Volcano's host:port form, are the only changes)."""
    from central.admission.jobs import mutate_job
    from central.framework.conf import DEFAULT_CONF_YAML
    from tests.builders import node
    from tests.ports import free_port
    from tests.waiting import eventually

    real.put(node("n1"))
    uid = real.put(mutate_job({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                               "metadata": {"name": "train", "namespace": real.namespace},
                               "spec": {"tasks": [{"name": "w", "replicas": 1, "template": {
                                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}))["metadata"]["uid"]
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(DEFAULT_CONF_YAML)  # Volcano's default: backfill places the pod, which asks for nothing
    scheduler_args = [f"--scheduler-conf={conf}" if a.startswith("--scheduler-conf=") else a for a in SCHEDULER_DEFAULTS]
    procs, ports = [], {name: (free_port(), free_port()) for name in ("controllers", "scheduler")}
    for name, args in (("controllers", CONTROLLERS_DEFAULTS), ("scheduler", scheduler_args)):
        listen, healthz = ports[name]
        with open(tmp_path / f"{name}.log", "wb") as out:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "caldera", name, f"--kubeconfig={real.kubeconfig}",
                 f"--listen-address=127.0.0.1:{listen}", f"--healthz-address=:{healthz}", *args],
                env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=out, stderr=subprocess.STDOUT))
    try:
        def bound() -> bool:
            assert all(proc.poll() is None for proc in procs), "a process exited; its log is printed below"
            pod = real.pod("train-w-0") or {}
            return bool(pod.get("spec", {}).get("nodeName"))
        eventually(bound, timeout=90, what="the Job's pod bound")
        assert real.get("scheduling.volcano.sh/v1beta1", "PodGroup", f"train-{uid}")
        for port in (p for pair in ports.values() for p in pair):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
                assert answer.status == 200
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
        for name in ("controllers", "scheduler"):
            print((tmp_path / f"{name}.log").read_text()[-3000:])  # pytest shows it where the test fails
    log = (tmp_path / "scheduler.log").read_text()
    assert "accepted for Volcano's chart, changing nothing here: --logtostderr --enable-healthz" in log
