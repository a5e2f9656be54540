"""Ginkgo's JSON report (`ginkgo run --json-report`) read into per-spec results, and the
per-suite table a person reads: pass/fail/skip counts and each failure's first line."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
# Ginkgo's spec states folded into the three a table shows; a timeout or a panic is a failure,
# a spec cut short by Ctrl-C has no verdict (the suite's "Interrupted by User" says so).
_OUTCOME = {"passed": PASSED, "skipped": SKIPPED, "pending": SKIPPED, "failed": FAILED, "panicked": FAILED,
            "timedout": FAILED, "aborted": FAILED, "interrupted": SKIPPED}
# Nodes that run outside any spec: their failure fails the suite, not one spec.
_SUITE_NODES = {"BeforeSuite", "SynchronizedBeforeSuite", "AfterSuite", "SynchronizedAfterSuite",
                "ReportBeforeSuite", "ReportAfterSuite", "DeferCleanup (Suite)"}


@dataclass(frozen=True)
class Spec:
    name: str
    outcome: str  # PASSED, FAILED or SKIPPED
    message: str = ""  # a failure's first line
    seconds: float = 0.0


@dataclass
class SuiteResult:
    suite: str
    specs: list[Spec] = field(default_factory=list)
    # Failures outside specs (BeforeSuite, a crash of the whole binary), each as one line.
    suite_failures: list[str] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for s in self.specs if s.outcome == outcome)

    def failures(self) -> list[Spec]:
        return [s for s in self.specs if s.outcome == FAILED]

    def by_name(self) -> dict[str, Spec]:
        return {s.name: s for s in self.specs}


HEADLINE_CHARS = 400


def first_line(message: str) -> str:
    """A failure's first line, where Gomega's first line is only a header ("Expected",
    "Unexpected error:") joined with the indented lines that complete it: the values compared
    are what tells one failure from another. Go pointer values are dropped, the rest kept."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    words = [lines[0]]
    if lines[0] in ("Expected", "Unexpected error:") or lines[0].endswith(":"):
        for line in lines[1:]:
            if line in ("{", "[") or line.startswith(("{", "[]")):  # a Go struct dump: detail, not headline
                break
            words.append(line)
    text = re.sub(r" \| 0x[0-9a-f]+", "", " ".join(words))
    return text if len(text) <= HEADLINE_CHARS else text[:HEADLINE_CHARS - 3] + "..."


def parse(suite: str, data: Any) -> SuiteResult:
    """One suite's results from the decoded report (a list of suite reports: one per binary run).
    Specs of the same full name are told apart by a ` #2`, ` #3` suffix, in report order."""
    result = SuiteResult(suite)
    seen: Counter[str] = Counter()
    for report in data if isinstance(data, list) else [data]:
        for reason in report.get("SpecialSuiteFailureReasons") or []:
            result.suite_failures.append(first_line(str(reason)))
        for spec in report.get("SpecReports") or []:
            kind = spec.get("LeafNodeType", "")
            outcome = _OUTCOME.get(spec.get("State", ""), FAILED)
            message = first_line((spec.get("Failure") or {}).get("Message", "")) if outcome == FAILED else ""
            if kind in _SUITE_NODES:
                if outcome == FAILED:
                    result.suite_failures.append(f"{kind}: {message or spec.get('State')}")
                continue
            if kind != "It":
                continue
            name = " ".join(t for t in [*(spec.get("ContainerHierarchyTexts") or []), spec.get("LeafNodeText", "")] if t)
            seen[name] += 1
            if seen[name] > 1:
                name = f"{name} #{seen[name]}"
            result.specs.append(Spec(name, outcome, message, (spec.get("RunTime") or 0) / 1e9))
    return result


def load(suite: str, path: Path) -> SuiteResult:
    """The report ginkgo wrote at `path`; a missing or unreadable one is a suite failure."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return SuiteResult(suite, suite_failures=[f"no readable report at {path}: {err}"])
    return parse(suite, data)


def table(result: SuiteResult, system: str) -> str:
    """The suite's counts, then one line per failure."""
    lines = [f"{result.suite} on {system}: {result.count(PASSED)} passed, {result.count(FAILED)} failed, "
             f"{result.count(SKIPPED)} skipped"]
    lines += [f"  SUITE FAILURE  {line}" for line in result.suite_failures]
    lines += [f"  FAIL  {s.name}\n        {s.message}" for s in result.failures()]
    return "\n".join(lines)


def summary(results: list[tuple[str, SuiteResult]]) -> str:
    """A markdown table of every (system, suite) run: suite | system | pass | fail | skip."""
    rows = ["| suite | system | passed | failed | skipped |", "|---|---|---|---|---|"]
    for system, r in results:
        extra = " (suite failed)" if r.suite_failures else ""
        rows.append(f"| {r.suite} | {system} | {r.count(PASSED)} | {r.count(FAILED)}{extra} | {r.count(SKIPPED)} |")
    return "\n".join(rows)
