"""Each failure classified by the same spec's result on Volcano."""

from __future__ import annotations

from central.conformance.compare import BOTH, CALDERA_ONLY, NOT_ON_VOLCANO, VOLCANO_ONLY, classify, comparison
from central.conformance.report import FAILED, PASSED, SKIPPED, Spec, SuiteResult


def suite(*specs):
    return SuiteResult("jobp", [Spec(name, outcome, f"{name} broke" if outcome == FAILED else "")
                                for name, outcome in specs])


CALDERA = suite(("a", PASSED), ("b", FAILED), ("c", FAILED), ("d", FAILED), ("e", PASSED), ("f", FAILED),
                ("g", SKIPPED))
VOLCANO = suite(("a", PASSED), ("b", PASSED), ("c", FAILED), ("e", FAILED), ("f", SKIPPED), ("g", FAILED))


def test_each_failure_is_classified_caldera_only_first():
    got = [(d.name, d.kind) for d in classify(CALDERA, VOLCANO)]
    assert got == [("b", CALDERA_ONLY), ("d", NOT_ON_VOLCANO), ("f", NOT_ON_VOLCANO), ("c", BOTH),
                   ("e", VOLCANO_ONLY)]


def test_both_sides_messages_are_kept():
    both = next(d for d in classify(CALDERA, VOLCANO) if d.kind == BOTH)
    assert (both.caldera, both.volcano) == ("c broke", "c broke")
    only = next(d for d in classify(CALDERA, VOLCANO) if d.kind == CALDERA_ONLY)
    assert (only.caldera, only.volcano) == ("b broke", "")


def test_identical_results_have_no_caldera_only_failure():
    assert {d.kind for d in classify(VOLCANO, VOLCANO)} == {BOTH}


def test_the_comparison_counts_and_labels_every_failure():
    text = comparison(CALDERA, VOLCANO)
    assert text.splitlines()[0] == ("jobp: Caldera 2/4, Volcano 2/3 (passed/failed); 1 Caldera-only, "
                                    "2 not run on Volcano, 1 both, 1 Volcano-only")
    assert "  [Caldera-only]  b\n        Caldera: b broke" in text
    assert "  [Volcano-only]  e\n        Volcano: e broke" in text
