"""Traces: the JSON-lines format, the synthetic generator and the PAI converter."""

import json
from pathlib import Path

import pytest

from central.cli import main
from central.errors import InputError
from central.sim.trace import job_from_row, read_trace
from central.sim.tracegen import generate

PAI = Path(__file__).resolve().parents[1] / "data" / "pai"
NODE = ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {allocatable: {cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}\n")


def test_a_row_becomes_a_volcano_job_with_sim_annotations():
    job = job_from_row({"name": "j", "submit": 90, "queue": "q", "minAvailable": 2, "priority": 5,
                        "tasks": [{"name": "w", "replicas": 3, "duration": 60, "exitCode": 1,
                                   "requests": {"cpu": "2", "memory": "1Gi"}}]})
    assert job["metadata"]["annotations"] == {"sim.caldera.sh/submit-at": "90s"}
    assert (job["spec"]["minAvailable"], job["spec"]["queue"]) == (2, "q")
    task = job["spec"]["tasks"][0]
    assert task["template"]["metadata"]["annotations"] == {"sim.caldera.sh/duration": "60s",
                                                           "sim.caldera.sh/exit-code": "1"}
    assert task["template"]["spec"]["priority"] == 5


@pytest.mark.parametrize("line, message", [
    pytest.param('{"name": "j"}', "row 1: tasks: expected a non-empty list", id="no-tasks"),
    pytest.param('{"name": "j", "tasks": [{"replicas": 0}]}', "row 1: tasks[0].replicas: must be between 1 and 10000",
                 id="zero-replicas"),
    pytest.param('{"name": "j", "tasks": [{"requests": {"cpu": "lots"}}]}', "row 1: tasks[0].requests.cpu",
                 id="bad-quantity"),
    pytest.param('{"name": "j", "submit": -1, "tasks": [{}]}', "row 1: submit: expected a number >= 0",
                 id="negative-submit"),
    pytest.param('{"name": "j", "tasks": [{}], "colour": 1}', "row 1: colour: unknown field", id="unknown-field"),
    pytest.param('{"name": "j", "tasks": [{}], "minAvailable": 2}', "row 1: minAvailable: must be between 1 and",
                 id="min-available-over"),
    pytest.param("{name: j}", "row 1: not a JSON object", id="not-json"),
    pytest.param('{"name": "j", "tasks": [%s]}' % ", ".join(["{}"] * 50_000),
                 "row 1: tasks: 50000 tasks exceed the limit of 100 per job", id="fifty-thousand-tasks"),
    pytest.param('{"name": "j", "tasks": [{"replicas": 6000}, {"replicas": 6000}]}',
                 "row 1: tasks: 12000 pods exceed the limit of 10000 per job", id="too-many-pods"),
])
def test_a_bad_row_is_named_with_its_field(tmp_path, line, message):
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError) as err:
        read_trace(str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_generate_is_reproducible_and_follows_its_distributions():
    rows = generate(2000, seed=4, span=86400.0)
    assert rows == generate(2000, seed=4, span=86400.0)
    pods = [sum(t["replicas"] for t in r["tasks"]) for r in rows]
    assert set(pods) <= {1, 2, 4, 8, 16, 32}
    assert 9.0 < sum(pods) / len(pods) < 11.6  # mean 10.3
    gpu = sum(1 for r in rows if "nvidia.com/gpu" in r["tasks"][-1]["requests"]) / len(rows)
    assert 0.25 < gpu < 0.35
    durations = sorted(r["tasks"][0]["duration"] for r in rows)
    assert 1500 < durations[len(durations) // 2] < 2100  # median 30 minutes
    assert durations[-1] > 10 * durations[len(durations) // 2]  # heavy tail
    assert all(0 < a["submit"] <= b["submit"] <= 86400 * 1.5 for a, b in zip(rows, rows[1:]))


def test_pai_tables_convert_and_simulate(tmp_path, capsys):
    assert main(["trace", "from-pai", "--job-table", str(PAI / "pai_job_table.csv"),
                 "--task-table", str(PAI / "pai_task_table.csv")]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert "3 jobs converted, 1 left out" in err  # the Running job has no end time
    by_name = {r["name"]: r for r in rows}
    two = by_name["pai-4f057009a5d481acec67b088"]
    assert two["submit"] == 0.0  # the earliest submission is the origin
    assert two["tasks"][1] == {"name": "worker", "replicas": 2, "duration": 2980.0,
                               "requests": {"cpu": "4", "memory": "20G", "nvidia.com/gpu": "1"}}
    failed = by_name["pai-af724763f4f5d0beef445849"]
    assert failed["tasks"][0]["exitCode"] == 1 and failed["tasks"][0]["requests"]["nvidia.com/gpu"] == "2"
    trace = tmp_path / "pai.jsonl"
    trace.write_text(out)
    (tmp_path / "node.yaml").write_text(NODE)
    assert main(["simulate", "--manifests", str(tmp_path / "node.yaml"), "--trace", str(trace),
                 "--until", "2h", "--output", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {k: j["phase"] for k, j in result["jobs"].items()} == {
        "default/pai-4b3f04b66a525d2df903eb16": "Completed", "default/pai-4f057009a5d481acec67b088": "Completed",
        "default/pai-af724763f4f5d0beef445849": "Failed"}


def test_bad_trace_row_exits_2_with_one_line(tmp_path, capsys):
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "t.jsonl").write_text('{"name": "ok", "tasks": [{}]}\n{"name": "bad", "tasks": [{"duration": "1h"}]}\n')
    assert main(["simulate", "--manifests", str(tmp_path / "node.yaml"), "--trace", str(tmp_path / "t.jsonl"),
                 "--until", "1h"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "row 2: tasks[0].duration: expected a number >= 0" in err
