"""Opt-in: Volcano's own e2e suites pass on Caldera wherever they pass on Volcano, on the same
kind of control plane. CALDERA_CONFORMANCE=1 enables it; CALDERA_CONFORMANCE_SUITES picks the
suites (comma-separated, default admission,vcctl); the first run builds Volcano's suites from
CALDERA_VOLCANO_REPO. `caldera conformance --against both` prints the same comparison."""

from __future__ import annotations

import os

import pytest

from central.conformance import build, compare, harness
from central.localcluster import build as cpbuild

pytestmark = [pytest.mark.conformance, pytest.mark.e2e]


def suites() -> list[str]:
    chosen = os.environ.get("CALDERA_CONFORMANCE_SUITES", "admission,vcctl")
    return [s.strip() for s in chosen.split(",") if s.strip()]


@pytest.mark.parametrize("suite", suites())
def test_caldera_passes_what_volcano_passes(suite, conformance_enabled, tmp_path):
    assert suite in build.SUITES, f"unknown suite {suite!r}; choose from {', '.join(build.SUITES)}"
    why = cpbuild.unavailable()
    if why:
        pytest.skip(f"no real control plane here: {why}")
    built = build.ensure(suites=(suite,))
    results = {system: harness.run_suite(built, suite, system, tmp_path / system, say=lambda line: None)
               for system in harness.SYSTEMS}
    assert not results[harness.VOLCANO].suite_failures, "the harness could not run the suite on Volcano"
    caldera_only = [d for d in compare.classify(results[harness.CALDERA], results[harness.VOLCANO])
                    if d.kind in (compare.CALDERA_ONLY, compare.NOT_ON_VOLCANO)]
    assert not caldera_only and not results[harness.CALDERA].suite_failures, \
        compare.comparison(results[harness.CALDERA], results[harness.VOLCANO])
