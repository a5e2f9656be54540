"""A non-editable install carries every shipped example, and the commands find them.

The wheel is built from the repository (no network: the build uses the installed setuptools)
and installed without dependencies into a fresh virtualenv that sees this interpreter's
packages, so the installed copy, not the checkout, is what runs.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # a clean copy of the tracked files: the checkout's build/ and egg-info never leak in
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True, capture_output=True,
                           text=True).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (build / name).parent.mkdir(parents=True, exist_ok=True)
            (build / name).write_bytes(source.read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(build)], check=True, capture_output=True)
    return next(out.glob("caldera-*.whl"))


def test_the_wheel_holds_every_example(wheel: Path) -> None:
    shipped = {f"central/{p.relative_to(ROOT / 'central').as_posix()}"
               for p in (ROOT / "central" / "examples").rglob("*") if p.is_file()}
    inside = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("central/examples/")}
    assert shipped - inside == set()


def test_installed_copy_runs_its_examples(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)
    where = subprocess.run([python, "-c", "import central, pathlib; print(pathlib.Path(central.__file__).parent)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path).stdout.strip()
    assert where.startswith(str(venv))
    examples = Path(where) / "examples"
    run = subprocess.run([venv / "bin" / "caldera", "simulate", "--manifests", str(examples / "preemption"),
                          "--config", str(examples / "configs" / "preempt-reclaim.conf"), "--cycles", "2"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "preempted to make room for analytics/exec-dashboard-0" in run.stdout
