"""Each spec's result on Caldera set against its result on Volcano, run by the same harness on
the same kind of control plane: a failure on both is a limit of the harness (the simulated
kubelet runs no container commands, no kube-scheduler runs); a failure on Caldera alone is a
difference a Volcano user would meet."""

from __future__ import annotations

from dataclasses import dataclass

from central.conformance.report import FAILED, PASSED, SuiteResult

CALDERA_ONLY = "Caldera-only"
BOTH = "both"
VOLCANO_ONLY = "Volcano-only"
NOT_ON_VOLCANO = "not run on Volcano"


@dataclass(frozen=True)
class Difference:
    name: str
    kind: str  # CALDERA_ONLY, BOTH, VOLCANO_ONLY or NOT_ON_VOLCANO
    caldera: str  # Caldera's failure's first line ("" where it passed)
    volcano: str  # Volcano's


def classify(caldera: SuiteResult, volcano: SuiteResult) -> list[Difference]:
    """Every spec that failed on either side, Caldera-only first, then in report order.
    A spec Volcano skipped or never ran, failing on Caldera, cannot be called a harness limit."""
    theirs = volcano.by_name()
    out = []
    for spec in caldera.specs:
        other = theirs.get(spec.name)
        if spec.outcome == FAILED:
            if other is None or other.outcome not in (PASSED, FAILED):
                kind = NOT_ON_VOLCANO
            else:
                kind = BOTH if other.outcome == FAILED else CALDERA_ONLY
            out.append(Difference(spec.name, kind, spec.message, other.message if other else ""))
        elif spec.outcome == PASSED and other is not None and other.outcome == FAILED:
            out.append(Difference(spec.name, VOLCANO_ONLY, "", other.message))
    order = {CALDERA_ONLY: 0, NOT_ON_VOLCANO: 1, BOTH: 2, VOLCANO_ONLY: 3}
    return sorted(out, key=lambda d: order[d.kind])  # stable: report order within a kind


def comparison(caldera: SuiteResult, volcano: SuiteResult) -> str:
    """The suite's pass/fail on both systems and each failure with its class."""
    diffs = classify(caldera, volcano)
    counts = {k: sum(1 for d in diffs if d.kind == k) for k in (CALDERA_ONLY, NOT_ON_VOLCANO, BOTH, VOLCANO_ONLY)}
    lines = [f"{caldera.suite}: Caldera {caldera.count(PASSED)}/{caldera.count(FAILED)}, "
             f"Volcano {volcano.count(PASSED)}/{volcano.count(FAILED)} (passed/failed); "
             + ", ".join(f"{n} {k}" for k, n in counts.items())]
    for side, result in (("Caldera", caldera), ("Volcano", volcano)):
        lines += [f"  SUITE FAILURE on {side}  {line}" for line in result.suite_failures]
    for d in diffs:
        lines.append(f"  [{d.kind}]  {d.name}")
        if d.caldera:
            lines.append(f"        Caldera: {d.caldera}")
        if d.volcano:
            lines.append(f"        Volcano: {d.volcano}")
    return "\n".join(lines)
