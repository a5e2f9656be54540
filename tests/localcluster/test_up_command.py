"""`caldera up` / `caldera down` on bad input and faults: one line, exit 2, nothing left."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from central.localcluster import build
from central.localcluster.processes import Supervisor, alive
from central.localcluster.up import down


def caldera(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caldera", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def test_without_go_up_says_why_in_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path / "empty"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = caldera("up", "--dir", str(tmp_path / "c"), env=env)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "caldera up: Go toolchain not found on PATH (the real control plane is built from Go modules; needs Go >= 1.26)"]
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "--nodes: expected 1..5000"),
    (["--node-cpu", "lots"], "--node-cpu: expected a positive quantity"),
    (["--numa", "64", "--node-cpu", "8"], "--numa: expected 1..8"),
])
def test_bad_flags_are_refused_before_anything_starts(tmp_path: Path, args: list[str], message: str) -> None:
    out = caldera("up", "--dir", str(tmp_path / "c"), *args)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert not (tmp_path / "c" / "state.json").exists()


@pytest.mark.e2e
def test_a_port_in_use_is_named_and_nothing_is_left_running(tmp_path: Path) -> None:
    why = build.unavailable()
    if why:
        pytest.skip(f"no real control plane here: {why}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = caldera("up", "--dir", str(tmp_path / "c"), "--port", str(port))
    assert out.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use" in out.stderr and "Traceback" not in out.stderr
    assert not Supervisor(tmp_path / "c").procs


def test_up_refuses_a_dir_whose_cluster_still_runs(tmp_path: Path) -> None:
    from central.localcluster.processes import StartError
    from central.localcluster.up import up
    sup = Supervisor(tmp_path / "c")
    sup.start("etcd", ["sleep", "300"])
    try:
        with pytest.raises(StartError, match="already holds a running cluster"):
            up(tmp_path / "c", [])
    finally:
        sup.stop_all()


def test_down_on_a_missing_or_half_started_dir(tmp_path: Path) -> None:
    assert caldera("down", "--dir", str(tmp_path / "never")).returncode == 0
    half = tmp_path / "half"
    sup = Supervisor(half)
    sleeper = sup.start("sleeper", ["sleep", "300"])
    (half / "state.json").write_text((half / "state.json").read_text())  # as a killed `up` leaves it
    assert down(half) == 1
    assert not alive(sleeper.pid) and not half.exists()
