"""`caldera validate`, the contract: one JSON object keyed Kind/namespace/name, exit 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from central.cli import main
from tests.builders import job, podgroup, queue, task


def write(path: Path, *objects: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(objects))
    return path


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["validate", *args, "--output", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_all_allowed_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = write(
        tmp_path / "m.yaml",
        queue("team", capability={"cpu": "8"}),
        job(queue="team"),
        podgroup(queue="team"),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}},
    )
    code, result = validate(capsys, "--manifests", str(manifests))
    assert code == 0
    assert result == {
        key: {"allowed": True, "errors": []}
        for key in ("Queue//team", "Job/ml/train", "PodGroup/ml/pg", "Service/default/svc")
    }


def test_denied_objects_against_the_cluster_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(
        tmp_path / "cluster.yaml", queue("closed", state="Closed"), queue("parent"), queue("leaf", parent="parent")
    )
    manifests = write(
        tmp_path / "m.yaml",
        job("a", queue="closed"),
        job("b", queue="parent"),
        job("c", queue="leaf"),
        job("d", tasks=[task("x"), task("x")]),
    )
    code, result = validate(capsys, "--manifests", str(manifests), "--cluster", str(cluster))
    assert code == 1
    assert result["Job/ml/a"] == {
        "allowed": False,
        "errors": ['spec.queue: can only submit job to queue with state Open; queue "closed" is Closed'],
    }
    assert result["Job/ml/b"]["errors"] == [
        'spec.queue: can only submit job to a leaf queue; queue "parent" has child queues leaf'
    ]
    assert result["Job/ml/c"] == {"allowed": True, "errors": []}
    assert result["Job/ml/d"]["errors"] == ['spec.tasks[1].name: duplicated task name found: "x" (also spec.tasks[0])']


def test_defaults_are_applied_before_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No queue means `default`, which exists implicitly; minAvailable defaults to the sum of replicas."""
    raw = job()
    del raw["spec"]["queue"]
    code, result = validate(capsys, "--manifests", str(write(tmp_path / "m.yaml", raw)))
    assert (code, result["Job/ml/train"]["allowed"]) == (0, True)


def test_directory_of_manifests_and_limits_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "jobs").mkdir()
    write(tmp_path / "jobs" / "a.yaml", job("a"))
    write(tmp_path / "jobs" / "b.yml", job("b", tasks=[task("big", 50)]))
    code, result = validate(capsys, "--manifests", str(tmp_path / "jobs"), "--max-replicas-per-job", "10")
    assert code == 1
    assert result["Job/ml/a"]["allowed"] and result["Job/ml/b"]["errors"] == [
        "spec.tasks: 50 replicas in all exceed the limit of 10 per job"
    ]
    assert validate(capsys, "--manifests", str(tmp_path / "jobs"), "--max-replicas", "10")[1] == result


def test_repeated_manifests_accumulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.yaml", job("a"))
    b = write(tmp_path / "b.yaml", job("b"))
    code, result = validate(capsys, "--manifests", str(a), "--manifests", str(b))
    assert (code, sorted(result)) == (0, ["Job/ml/a", "Job/ml/b"])


def test_a_queue_in_the_manifests_is_visible_to_later_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = write(tmp_path / "m.yaml", job(queue="new"), queue("new"), queue("new"))
    code, result = validate(capsys, "--manifests", str(manifests))
    assert result["Job/ml/train"]["allowed"]
    assert result["Queue//new"]["allowed"] is False  # the second copy of the same queue
    assert code == 1


@pytest.mark.parametrize(
    "content, message",
    [
        pytest.param("kind: Job\nspec: [", "malformed YAML at line", id="malformed-yaml"),
        pytest.param("- just\n- a list\n", "document 1: expected a Kubernetes object", id="not-an-object"),
        pytest.param("metadata: {name: x}\n", "document 1: expected a Kubernetes object", id="no-kind"),
    ],
)
def test_unreadable_input_exits_2_naming_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    done = subprocess.run(
        [sys.executable, "-m", "caldera", "validate", "--manifests", str(path), "--output", "json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert str(path) in done.stderr and message in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--manifests", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: no such file or directory" in capsys.readouterr().err


def test_table_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = write(tmp_path / "m.yaml", job("ok"), job("bad", queue="ghost"))
    assert main(["validate", "--manifests", str(manifests)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["OBJECT", "ALLOWED", "ERRORS"]
    assert out[1].split()[:2] == ["Job/ml/ok", "yes"]
    assert out[2].split()[:2] == ["Job/ml/bad", "no"] and 'unable to find job queue "ghost"' in out[2]
    assert out[-1] == "2 object(s), 1 denied"


def test_the_shipped_examples_are_admitted(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2] / "examples"
    code, result = validate(capsys, "--manifests", str(root / "workloads"), "--cluster", str(root / "cluster"))
    assert code == 0 and result and all(r["allowed"] for r in result.values()), result


def test_unreadable_cluster_or_empty_directory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = write(tmp_path / "m.yaml", job())
    (tmp_path / "cluster.yaml").write_text("kind: Queue\nmetadata: {name: [\n")
    assert main(["validate", "--manifests", str(manifests), "--cluster", str(tmp_path / "cluster.yaml")]) == 2
    assert "cluster.yaml: malformed YAML" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["validate", "--manifests", str(tmp_path / "empty")]) == 2
    assert "no .yaml, .yml or .json files" in capsys.readouterr().err


def test_golden_bad_objects(capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's exact output for one object per rule (tests/data/admission, reviewed by hand)."""
    data = Path(__file__).resolve().parents[1] / "data" / "admission"
    code, result = validate(
        capsys, "--manifests", str(data / "manifests.yaml"), "--cluster", str(data / "cluster.yaml")
    )
    assert code == 1
    assert result == json.loads((data / "expected.json").read_text())


def test_parents_in_the_manifests_are_admitted_before_their_children(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = write(
        tmp_path / "m.yaml",
        queue("grandchild", parent="child"),
        queue("child", parent="top", deserved={"cpu": "2"}),
        queue("top", deserved={"cpu": "4"}),
        job(queue="grandchild"),
    )
    code, result = validate(capsys, "--manifests", str(manifests))
    assert code == 0, result
    assert list(result) == ["Queue//grandchild", "Queue//child", "Queue//top", "Job/ml/train"]  # manifest order


def test_queue_state_in_spec_counts_in_the_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    closed = queue("old")
    closed["spec"]["state"] = "Closed"
    cluster = write(tmp_path / "c.yaml", closed)
    code, result = validate(
        capsys, "--manifests", str(write(tmp_path / "m.yaml", job(queue="old"))), "--cluster", str(cluster)
    )
    assert code == 1 and "is Closed" in result["Job/ml/train"]["errors"][0]
