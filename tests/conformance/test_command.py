"""`caldera conformance --reports-only`: the tables and comparison of an earlier run's reports."""

from __future__ import annotations

import json

from central.cli import main


def write_report(path, states):
    path.mkdir(parents=True)
    specs = [{"ContainerHierarchyTexts": ["Job"], "LeafNodeText": name, "LeafNodeType": "It", "State": state,
              "Failure": {"Message": f"{name} failed"} if state == "failed" else {}} for name, state in states]
    (path / "report.json").write_text(json.dumps([{"SpecReports": specs}]))


def test_both_systems_are_compared_and_a_caldera_only_failure_exits_1(tmp_path, capsys):
    write_report(tmp_path / "caldera" / "jobseq", [("a", "passed"), ("b", "failed"), ("c", "failed")])
    write_report(tmp_path / "volcano" / "jobseq", [("a", "passed"), ("b", "passed"), ("c", "failed")])
    code = main(["conformance", "--reports-only", "--dir", str(tmp_path), "--suite", "jobseq", "--against", "both"])
    out = capsys.readouterr().out
    assert code == 1
    assert "| jobseq | caldera | 1 | 2 | 0 |" in out and "| jobseq | volcano | 2 | 1 | 0 |" in out
    assert "[Caldera-only]  Job b" in out and "[both]  Job c" in out
    assert (tmp_path / "results.md").read_text().strip() == out.strip()


def test_failures_volcano_shares_do_not_fail_the_comparison(tmp_path, capsys):
    write_report(tmp_path / "caldera" / "vcctl", [("a", "passed"), ("c", "failed")])
    write_report(tmp_path / "volcano" / "vcctl", [("a", "passed"), ("c", "failed")])
    assert main(["conformance", "--reports-only", "--dir", str(tmp_path), "--suite", "vcctl", "--against", "both"]) == 0
    # against Caldera alone, any failure fails
    assert main(["conformance", "--reports-only", "--dir", str(tmp_path), "--suite", "vcctl"]) == 1


def test_reports_only_needs_the_folder(capsys):
    assert main(["conformance", "--reports-only", "--suite", "vcctl"]) == 2
    assert "--reports-only" in capsys.readouterr().err
