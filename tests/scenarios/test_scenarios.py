"""Runs every case of every scenario file in this folder."""

from pathlib import Path

import pytest

from tests.scenarios.harness import check, load_cases, run_case

HERE = Path(__file__).parent
CASES = [pytest.param(case, id=f"{path.stem}: {case['name']}")
         for path in sorted(HERE.glob("*.yaml")) for case in load_cases(path)]


@pytest.mark.parametrize("case", CASES)
def test_scenario(case):
    result, _ = run_case(case)
    check(case, result)
