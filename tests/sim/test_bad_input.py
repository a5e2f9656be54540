"""Bad input to `caldera simulate --until`: one line naming the object and field, exit 2."""

import pytest

from central.cli import main

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi}}\n"
JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, annotations: {%s}}
spec:
  tasks:
  - name: w
    template:
      metadata: {annotations: {%s}}
      spec: {containers: [{name: c, image: x}]}
"""


@pytest.mark.parametrize("job_annotations, pod_annotations, message", [
    pytest.param("", "sim.caldera.sh/duration: soon",
                 "Pod default/j-w-0: metadata.annotations[sim.caldera.sh/duration]: expected a duration",
                 id="duration"),
    pytest.param("", "sim.caldera.sh/exit-code: '300'",
                 "Pod default/j-w-0: metadata.annotations[sim.caldera.sh/exit-code]: expected an exit code 0..255",
                 id="exit-code"),
    pytest.param("sim.caldera.sh/min-peers: none", "",
                 "Job default/j: metadata.annotations[sim.caldera.sh/min-peers]: expected a whole number",
                 id="min-peers"),
    pytest.param("sim.caldera.sh/submit-at: later", "",
                 "Job default/j: metadata.annotations[sim.caldera.sh/submit-at]: expected a duration", id="submit-at"),
])
def test_malformed_sim_annotation(tmp_path, capsys, job_annotations, pod_annotations, message):
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "job.yaml").write_text(JOB % (job_annotations, pod_annotations))
    code = main(["simulate", "--manifests", str(tmp_path), "--until", "1h"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0
    assert f"{tmp_path / 'job.yaml'}: {message}" in err


@pytest.mark.parametrize("args, message", [
    pytest.param(["--until", "forever"], "--until: expected a duration", id="until"),
    pytest.param(["--until", "0s"], "--until: must be longer than 0", id="until-zero"),
    pytest.param(["--until", "1h", "--period", "0s"], "--period: must be longer than 0", id="period"),
    pytest.param(["--report", "x.html"], "--report: needs --until", id="report-without-until"),
    pytest.param(["--config", "a", "--config", "b"], "--config: needs --until", id="compare-without-until"),
])
def test_bad_flags(capsys, args, message):
    assert main(["simulate", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_pod_stops_the_run_before_it_starts(tmp_path, capsys):
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {sim.caldera.sh/submit-at: 1h}}\n"
        "spec: {schedulerName: volcano, containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n")
    assert main(["simulate", "--manifests", str(tmp_path), "--until", "2h"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert f"{tmp_path / 'pod.yaml'}: Pod default/p: spec.containers[0].resources.requests.cpu" in err


@pytest.mark.parametrize("args, message", [
    pytest.param(["--preemption", "foo"], "argument --preemption: expected NODESxPODS", id="preemption"),
    pytest.param(["--size", "0x0"], "argument --size: expected NODESxPODS with both at least 1", id="zero"),
    pytest.param(["--size", "10x"], "argument --size: expected NODESxPODS", id="half"),
])
def test_bench_refuses_bad_sizes_before_running(capsys, monkeypatch, args, message):
    from central.bench import session as bench

    monkeypatch.setattr(bench, "run_size", lambda *a: pytest.fail("a run started before the flags were checked"))
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_jobs_pass_admission_against_the_workloads_queues(tmp_path, capsys):
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "job.yaml").write_text((JOB % ("", "")).replace("spec:\n", "spec:\n  queue: nowhere\n", 1))
    assert main(["simulate", "--manifests", str(tmp_path), "--until", "1h"]) == 2
    assert f"{tmp_path / 'job.yaml'}: Job default/j: spec.queue" in capsys.readouterr().err


def test_a_command_with_an_unknown_action(tmp_path, capsys):
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "cmd.yaml").write_text("apiVersion: bus.volcano.sh/v1alpha1\nkind: Command\nmetadata: {name: c}\n"
                                       "action: Explode\ntarget: {kind: Job, name: j}\n")
    assert main(["simulate", "--manifests", str(tmp_path), "--until", "1h"]) == 2
    assert "cmd.yaml: Command default/c: action: unknown 'Explode'" in capsys.readouterr().err
