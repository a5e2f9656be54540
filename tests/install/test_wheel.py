"""A non-editable install carries every shipped example, and the commands find them.

The wheel is built from the repository (no network: the build uses the installed setuptools)
and installed without dependencies into a fresh virtualenv that sees this interpreter's
packages, so the installed copy, not the checkout, is what runs.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the installed copy, never a checkout that PYTHONPATH names
INSTALLED = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # a clean copy of the tracked files: the checkout's build/ and egg-info never leak in
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], check=True, capture_output=True,
                           text=True).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_symlink():  # central/daemonset -> ../daemonset: the wheel's manifests come through it
            (build / name).parent.mkdir(parents=True, exist_ok=True)
            (build / name).symlink_to(source.readlink())
        elif source.is_file():
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


def _install(wheel: Path, tmp_path: Path) -> Path:
    """A fresh virtualenv holding the wheel; its python."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # --system-site-packages reaches the base interpreter only; where the tests run from a
    # virtualenv, the dependencies live in its site-packages, which a path file adds (after the
    # new venv's own, and without running its .pth files: no editable checkout sneaks in)
    [own] = (venv / "lib").glob("python3*/site-packages")
    (own / "dependencies.pth").write_text("".join(f"{path}\n" for path in site.getsitepackages()))
    # --ignore-installed: the added site-packages may hold an editable caldera, which pip would
    # call installed already
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    "--ignore-installed", str(wheel)], check=True, capture_output=True)
    return python


def test_the_wheel_holds_every_manifest(wheel: Path) -> None:
    shipped = {f"central/daemonset/{p.relative_to(ROOT / 'daemonset').as_posix()}"
               for p in (ROOT / "daemonset").rglob("*") if p.is_file()}
    inside = {name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("central/daemonset/")}
    assert shipped and shipped - inside == set()


def test_installed_copy_finds_the_manifests_caldera_up_installs(wheel: Path, tmp_path: Path) -> None:
    python = _install(wheel, tmp_path)
    script = ("from central.localcluster.install import kustomization_objects, repo_manifests; "
              "print(repo_manifests()); print(sorted(o['kind'] + '/' + o['metadata']['name'] "
              "for o in kustomization_objects(repo_manifests())))")
    where, kinds = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True,
                                  cwd=tmp_path, env=INSTALLED).stdout.splitlines()
    assert where.startswith(str(tmp_path / "venv"))
    from central.localcluster.install import kustomization_objects

    checkout = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in kustomization_objects(ROOT / "daemonset"))
    assert checkout and kinds == str(checkout)


def test_installed_copy_runs_its_examples(wheel: Path, tmp_path: Path) -> None:
    python = _install(wheel, tmp_path)
    venv = tmp_path / "venv"
    where = subprocess.run([python, "-c", "import central, pathlib; print(pathlib.Path(central.__file__).parent)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path, env=INSTALLED).stdout.strip()
    assert where.startswith(str(venv))
    examples = Path(where) / "examples"
    run = subprocess.run([venv / "bin" / "caldera", "simulate", "--manifests", str(examples / "preemption"),
                          "--config", str(examples / "configs" / "preempt-reclaim.conf"), "--cycles", "2"],
                         capture_output=True, text=True, cwd=tmp_path, env=INSTALLED)
    assert run.returncode == 0, run.stderr
    assert "preempted to make room for analytics/exec-dashboard-0" in run.stdout


def test_installed_copy_runs_caldera_bench(wheel: Path, tmp_path: Path) -> None:
    _install(wheel, tmp_path)
    run = subprocess.run([tmp_path / "venv" / "bin" / "caldera", "bench", "--size", "20x100", "--preemption", "none"],
                         capture_output=True, text=True, cwd=tmp_path, env=INSTALLED)
    assert run.returncode == 0, run.stderr
    assert "placed" in run.stdout
