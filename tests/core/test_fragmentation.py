"""`caldera fragmentation`: a small run prints one row per policy; bad options exit 2."""

import re

import pytest

from central.cli import main


def test_small_run_compares_policies(capsys):
    assert main(["fragmentation", "--nodes", "4", "--steps", "12", "--seeds", "1",
                 "--policy", "binpack", "--policy", "fragmentation-aware"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("24 GPUs on 4 nodes at saturation")
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+(binpack|fragmentation-aware)\s", line)]
    assert [r[0] for r in rows] == ["binpack", "fragmentation-aware"]
    for row in rows:
        whole, shared = int(row[3]), int(row[4])
        assert whole + shared > 0
    assert "1 seeded stream;" in out
    # every column explained under the table
    for column in ("stranded GPUs", "cards busy", "whole-card jobs", "shared pods", "whole waiting"):
        assert any(line.startswith(f"  {column}  ") for line in out.splitlines()), column


@pytest.mark.parametrize("option", [
    pytest.param(["--shared", "1.5"], id="shared"), pytest.param(["--nodes", "0"], id="nodes"),
    pytest.param(["--seeds", "0"], id="seeds")])
def test_bad_options(capsys, option):
    assert main(["fragmentation", *option]) == 2
    assert option[0] in capsys.readouterr().err
