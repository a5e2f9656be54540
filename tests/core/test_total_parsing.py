"""Every parser of user data returns a bounded value or raises InputError naming the field."""

from datetime import timedelta
from pathlib import Path

import pytest

from caldera.cli import main
from central.errors import InputError
from central.model import annotations
from central.model.fields import check_tree, parse_duration, yaml_documents
from central.resources.quantity import INT64_MAX, parse_quantity
from central.resources.vectors import parse_resource_list

REGRESSIONS = Path(__file__).resolve().parent.parent / "data" / "regressions"


@pytest.mark.parametrize("value, message", [
    pytest.param("1e999999999", "too large", id="huge-exponent"),
    pytest.param(float("nan"), "finite", id="nan"),
    pytest.param(float("inf"), "finite", id="inf"),
    pytest.param(float("-inf"), "finite", id="minus-inf"),
    pytest.param(2**64, "too large", id="two-to-the-64"),
    pytest.param("8Ei", "too large", id="binary-over-int64"),
    pytest.param("1" * 65, "invalid quantity", id="too-long"),
    pytest.param({"a": 1}, "expected a number", id="map"),
])
def test_quantities_are_finite_and_within_int64(value, message):
    with pytest.raises(InputError, match=message):
        parse_quantity(value)


def test_quantity_bounds_are_exact():
    assert parse_quantity(str(INT64_MAX)) == INT64_MAX
    assert parse_quantity("1e-999999999") == 0  # below a nano-unit: nothing, at no cost
    with pytest.raises(InputError) as err:
        parse_resource_list({"cpu": str(INT64_MAX)}, "status.allocatable")
    assert err.value.where == "status.allocatable.cpu" and "millicores exceeds int64" in err.value.message


@pytest.mark.parametrize("text, seconds", [("0", 0), ("90s", 90), ("1h30m", 5400), ("1.5h", 5400), ("500ms", 0.5),
                                           ("2562047h", 2562047 * 3600)])
def test_durations(text, seconds):
    assert parse_duration(text, "x") == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["87600000000h", "2562048h", "1e9h", "", "soon", "5", {"h": 1}, None, "1" * 100 + "h"])
def test_bad_or_huge_durations_are_refused(text):
    with pytest.raises(InputError) as err:
        parse_duration(text, "metadata.annotations[volcano.sh/sla-waiting-time]")
    assert err.value.where == "metadata.annotations[volcano.sh/sla-waiting-time]"


def test_cpu_lists_are_bounded_before_expansion():
    assert annotations.cpu_set("0-3,8,10-11", limit=16) == {0, 1, 2, 3, 8, 10, 11}
    with pytest.raises(InputError, match="beyond the node's 64 ids"):
        annotations.cpu_set("0-99999999", limit=64)  # would be 10^8 ints if expanded first
    with pytest.raises(InputError, match="beyond the node's 8192 ids"):
        annotations.cpu_set("0-99999999")
    for bad in ["abc", "3-1", "0,²", "1-", "-1", 5]:
        with pytest.raises(InputError) as err:
            annotations.cpu_set(bad, limit=64)
        assert err.value.where == "metadata.annotations[caldera.sh/cpuset]"


def test_gpu_ids_accept_only_ascii_digits():
    assert annotations.gpu_ids("0,2") == [0, 2] and annotations.gpu_ids("") == []
    with pytest.raises(InputError, match="gpu-unhealthy-ids"):
        annotations.gpu_ids("0,²", annotations.GPU_UNHEALTHY)  # int('²') raises; isdigit() says yes


def test_annotation_check_names_each_bad_one():
    problems = annotations.check({annotations.SLA_WAITING_TIME: "87600000000h", annotations.CPUSET: "x",
                                  annotations.NUMA_POLICY: "fast", "unrelated": "anything"}, "Job")
    assert [p.where for p in problems] == ["metadata.annotations[caldera.sh/cpuset]",
                                           "metadata.annotations[volcano.sh/numa-topology-policy]",
                                           "metadata.annotations[volcano.sh/sla-waiting-time]"]
    assert annotations.check({annotations.PREEMPTABLE: "True", annotations.JDB_MIN_AVAILABLE: "100%"}, "PodGroup") == []


def test_documents_deep_or_self_containing_are_refused():
    with pytest.raises(InputError, match="nested deeper than 100"):
        yaml_documents("a: " + "[" * 5000 + "]" * 5000, "f.yaml")
    with pytest.raises(InputError, match="contain itself"):
        yaml_documents("a: &x [*x]", "f.yaml")
    loop: list = []
    loop.append(loop)
    with pytest.raises(InputError, match="contain itself"):
        check_tree({"a": loop}, "request")
    assert yaml_documents("a: 1".encode("utf-16"), "f.yaml") == [{"a": 1}]  # any encoding YAML allows


MANIFESTS = sorted((REGRESSIONS / "manifests").glob("*.yaml"))


@pytest.mark.parametrize("path", MANIFESTS, ids=[p.stem for p in MANIFESTS])
def test_every_input_that_once_failed_gets_one_line_and_exit_2(path, capsys):
    assert main(["simulate", "--manifests", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err, err
    # Nodes are not Caldera's to admit; everything else is refused or unreadable.
    assert main(["validate", "--manifests", str(path)]) in ((0, 1, 2) if path.stem.startswith("node-") else (1, 2))
    assert "Traceback" not in capsys.readouterr().err


CONFIGS = sorted((REGRESSIONS / "configs").glob("*.conf"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_config_that_once_failed_gets_one_line_and_exit_2(path, capsys):
    node = REGRESSIONS / "manifests" / ".." / "node.yaml"
    assert main(["simulate", "--manifests", str(node), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err, err


def test_internal_errors_exit_3_in_one_line(monkeypatch, capsys):
    import central.sim.command

    def broken(*_):
        raise KeyError("a bug")
    monkeypatch.setattr(central.sim.command, "simulate", broken)
    assert main(["simulate"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("caldera simulate: internal error") and err.count("\n") == 1


REPORTS = sorted((REGRESSIONS / "reports").glob("*.json"))


@pytest.mark.parametrize("path", REPORTS, ids=[p.stem for p in REPORTS])
def test_every_node_report_that_once_failed_gets_one_line_and_exit_2(path, capsys):
    assert main(["simulate", "--node-reports", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err, err


def test_job_run_reads_the_file_before_the_cluster(capsys):
    bad = str(REGRESSIONS / "manifests" / "not-utf8.yaml")
    assert main(["job", "run", "-f", bad, "--kubeconfig", "/nonexistent"]) == 2
    assert "not-utf8.yaml: malformed YAML" in capsys.readouterr().err
