"""constraints.txt pins a version of every dependency and test extra, inside the range
pyproject.toml allows, and the image build and CI install with it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    lines = [line.strip() for line in (ROOT / "constraints.txt").read_text().splitlines()]
    pairs = [line.split("==") for line in lines if line and not line.startswith("#")]
    assert all(len(pair) == 2 for pair in pairs), "only name==version lines"
    return {canonicalize_name(name): version for name, version in pairs}


def test_every_dependency_is_pinned_inside_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]
    pinned = pins()
    missing = [str(r) for r in wanted if canonicalize_name(r.name) not in pinned]
    assert missing == []
    outside = [f"{r} pinned at {pinned[canonicalize_name(r.name)]}" for r in wanted
               if not r.specifier.contains(pinned[canonicalize_name(r.name)], prereleases=True)]
    assert outside == []


def test_the_image_and_ci_install_with_the_constraints():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY pyproject.toml README.md LICENSE constraints.txt" in dockerfile
    assert "pip install --no-cache-dir -c constraints.txt /wheels/caldera-" in dockerfile
    assert "-c constraints.txt -e '.[test]'" in (ROOT / ".ci" / "run").read_text()
