"""The Dockerfile builds, and the image runs `caldera version` and one agent report.

No image registry is reachable here, so the base is made locally (debootstrap of Debian
bookworm: Python 3.11 with venv), imported with `buildah from scratch` + commit, and passed as
the BASE build argument; buildah builds with chroot isolation and vfs storage. PyPI is reached
for the dependencies, as any image build does. It takes minutes, so it runs when
CALDERA_BUILD_IMAGE=1 (and skips, saying why, where buildah, debootstrap or root are missing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CACHE = Path.home() / ".cache" / "caldera" / "image"
BASE_TAR = CACHE / "bookworm-python3.tar"


def _why_not() -> str | None:
    if os.environ.get("CALDERA_BUILD_IMAGE") != "1":
        return "set CALDERA_BUILD_IMAGE=1 to build the image with buildah (several minutes, needs PyPI)"
    missing = [tool for tool in ("buildah", "debootstrap") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install buildah debootstrap)"
    if os.geteuid() != 0:
        return "debootstrap and buildah's chroot isolation need root"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _run(*args: str, timeout: float = 900) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(args)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _base_tar() -> Path:
    if not BASE_TAR.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        rootfs = CACHE / "rootfs"
        shutil.rmtree(rootfs, ignore_errors=True)
        _run("debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
             "bookworm", str(rootfs), "http://deb.debian.org/debian", timeout=1800)
        _run("tar", "-C", str(rootfs), "-cf", str(BASE_TAR) + ".part", ".")
        os.replace(str(BASE_TAR) + ".part", BASE_TAR)
        shutil.rmtree(rootfs)
    return BASE_TAR


def _host_trust(tmp_path: Path) -> list[str]:
    """Where this host reaches PyPI through a TLS-inspecting proxy, its CA bundle (PIP_CERT) is
    mounted into the RUN steps with a pip.conf naming it: build-time only, not in the image."""
    ca = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if not ca or not Path(ca).is_file():
        return []
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\ncert = /etc/caldera-build/ca.crt\n")
    return ["--volume", f"{ca}:/etc/caldera-build/ca.crt:ro", "--volume", f"{conf}:/etc/pip.conf:ro"]


def test_the_dockerfile_builds_and_the_image_runs(tmp_path):
    storage = ["--root", str(tmp_path / "storage"), "--runroot", str(tmp_path / "run"), "--storage-driver", "vfs"]
    buildah = ("buildah", *storage)
    base = _run(*buildah, "from", "scratch").strip()
    _run(*buildah, "add", base, str(_base_tar()), "/")
    _run(*buildah, "commit", "--quiet", base, "localhost/caldera-base:bookworm")
    tag = f"localhost/caldera:{VERSION}"
    _run(*buildah, "bud", "--pull=false", "--isolation", "chroot",
         "--build-arg", "BASE=localhost/caldera-base:bookworm",
         *_host_trust(tmp_path), "-t", tag, "-f", str(ROOT / "Dockerfile"), str(ROOT), timeout=1800)
    config = json.loads(_run(*buildah, "inspect", "--type", "image", tag))["OCIv1"]["config"]
    assert config["User"] == "1000:1000" and config["Entrypoint"] == ["caldera"]
    container = _run(*buildah, "from", "--pull=false", tag).strip()
    run = (*buildah, "run", "--isolation", "chroot", container, "--")
    assert f"Version: {VERSION}" in _run(*run, "caldera", "version")
    report = json.loads(_run(*run, "caldera", "agent", "--once", "--output", "json"))
    assert report["node_name"] and report["resources"]
    # the final stage carries no build tools: no pip, no compiler, no sources
    _run(*run, "sh", "-c", "! command -v gcc && ! test -e /opt/caldera/bin/pip && ! test -e /src")
