"""Ginkgo's JSON report read into per-spec results and the per-suite table."""

from __future__ import annotations

import json

from central.conformance.report import FAILED, PASSED, SKIPPED, first_line, load, parse, summary, table


def spec(texts, leaf, state, message="", kind="It", runtime=2_500_000_000):
    return {"ContainerHierarchyTexts": texts, "LeafNodeText": leaf, "LeafNodeType": kind, "State": state,
            "RunTime": runtime, "Failure": {"Message": message} if message else {}}


REPORT = [{
    "SuitePath": "/bin", "SuiteDescription": "Volcano Admission Test Suite", "SuiteSucceeded": False,
    "SpecReports": [
        spec([], "", "passed", kind="SynchronizedBeforeSuite"),
        spec(["Job E2E Test"], "Create job with min available bigger than replicas", "passed"),
        spec(["Job E2E Test"], "Reject job with negative replicas", "failed",
             "\n  Expected\n      <string>: job min available ...\n  to contain substring\n"),
        spec(["Job E2E Test", "with plugins"], "ssh --no-root", "timedout", "A suite timeout occurred\nmore"),
        spec(["Job E2E Test"], "pending one", "pending"),
        spec(["Job E2E Test"], "skipped one", "skipped"),
        spec(["Job E2E Test"], "Reject job with negative replicas", "passed"),
        spec([], "", "failed", "cleanup broke", kind="AfterSuite"),
        spec(["Job E2E Test"], "", "failed", "a BeforeEach outside a spec is ignored", kind="BeforeEach"),
    ],
}]


def test_specs_are_named_by_their_containers_and_states_fold_into_three():
    result = parse("admission", REPORT)
    assert [(s.name, s.outcome) for s in result.specs] == [
        ("Job E2E Test Create job with min available bigger than replicas", PASSED),
        ("Job E2E Test Reject job with negative replicas", FAILED),
        ("Job E2E Test with plugins ssh --no-root", FAILED),  # a timeout is a failure
        ("Job E2E Test pending one", SKIPPED),
        ("Job E2E Test skipped one", SKIPPED),
        ("Job E2E Test Reject job with negative replicas #2", PASSED),  # a same-named spec stays apart
    ]
    assert (result.count(PASSED), result.count(FAILED), result.count(SKIPPED)) == (2, 2, 2)
    assert result.specs[0].seconds == 2.5


def test_a_failure_keeps_its_first_line_completed_where_gomega_only_opens_it():
    failures = parse("admission", REPORT).failures()
    assert [f.message for f in failures] == ["Expected <string>: job min available ... to contain substring",
                                             "A suite timeout occurred"]


def test_a_headline_drops_go_pointers_and_struct_dumps_and_is_bounded():
    message = ('Unexpected error:\n    <*errors.StatusError | 0x1fed60eb5a40>: \n    admission webhook denied it\n'
               '    {\n        ErrStatus: \n            code: 400\n')
    assert first_line(message) == "Unexpected error: <*errors.StatusError>: admission webhook denied it"
    assert first_line("Timed out after 60.001s.\nExpected\n  <bool>: false") == "Timed out after 60.001s."
    long = first_line("Expected\n" + "x" * 1000)
    assert len(long) == 400 and long.endswith("...")
    assert first_line("\n \n") == ""


def test_failures_outside_specs_fail_the_suite_not_a_spec():
    result = parse("admission", REPORT)
    assert result.suite_failures == ["AfterSuite: cleanup broke"]
    cut = spec(["Job"], "cut short", "interrupted", "Interrupted by User")
    interrupted = parse("jobp", [{"SpecialSuiteFailureReasons": ["Interrupted by User\nsecond"], "SpecReports": [cut]}])
    assert interrupted.suite_failures == ["Interrupted by User"]
    assert [(s.outcome, s.message) for s in interrupted.specs] == [(SKIPPED, "")]  # no verdict on Caldera


def test_a_missing_or_broken_report_is_a_suite_failure(tmp_path):
    assert "no readable report" in load("vcctl", tmp_path / "absent.json").suite_failures[0]
    (tmp_path / "broken.json").write_text("[{")
    assert load("vcctl", tmp_path / "broken.json").suite_failures
    (tmp_path / "ok.json").write_text(json.dumps(REPORT))
    assert load("vcctl", tmp_path / "ok.json").count(PASSED) == 2


def test_the_table_counts_and_lists_each_failure_with_its_first_line():
    text = table(parse("admission", REPORT), "caldera")
    assert text.splitlines()[0] == "admission on caldera: 2 passed, 2 failed, 2 skipped"
    assert "  SUITE FAILURE  AfterSuite: cleanup broke" in text
    assert "  FAIL  Job E2E Test Reject job with negative replicas\n        Expected <string>" in text


def test_the_summary_has_one_row_per_system_and_suite():
    rows = summary([("caldera", parse("admission", REPORT)), ("volcano", parse("admission", REPORT[:0]))])
    assert rows.splitlines()[2] == "| admission | caldera | 2 | 2 (suite failed) | 2 |"
    assert rows.splitlines()[3] == "| admission | volcano | 0 | 0 | 0 |"


def test_both_systems_run_a_suite_in_one_order(tmp_path) -> None:
    """The specs leave state behind (queues never deleted), so their order changes what a later
    spec meets: ginkgo's shuffle gets one seed for every run."""
    from central.conformance import ginkgo
    from central.conformance.build import Build
    built = Build(tmp_path)
    args = [ginkgo.argv(built, "schedulingaction", tmp_path / "r.json") for _ in range(2)]
    assert args[0] == args[1] and f"--seed={ginkgo.SEED}" in args[0]
