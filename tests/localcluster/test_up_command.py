"""`caldera up` / `caldera down` on bad input and faults: one line, exit 2, nothing left."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from central.localcluster import build
from central.localcluster.processes import PortPool, StartError, Supervisor, alive, port_in_use
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
    (["--port-range", "30000"], "--port-range: expected LO-HI"),
    (["--port-range", "30010-30000"], "--port-range: expected LO-HI"),
    (["--port-range", "30000-30009", "--nodes", "2"], "--port-range: 30000-30009 holds 10 ports; 2 node(s) need at least 11"),
    (["--port-range", "30000-30099", "--port", "6443"], "--port: 6443 is outside --port-range 30000-30099"),
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


def test_down_says_which_process_it_waits_for(tmp_path: Path) -> None:
    sup = Supervisor(tmp_path / "c")
    sleeper = sup.start("kube-apiserver", ["sleep", "300"])
    out = caldera("down", "--dir", str(tmp_path / "c"))
    assert out.returncode == 0
    lines = out.stderr.strip().splitlines()
    assert lines[0] == (f"caldera down: stopping kube-apiserver (pid {sleeper.pid}): waiting up to 10 s for it "
                        "to exit after SIGTERM")
    assert lines[-1] == f"caldera down: stopped 1 process(es), removed {tmp_path / 'c'}"


def test_switches_do_not_show_a_default_that_reads_backwards() -> None:
    out = caldera("up", "--help")
    text = " ".join(out.stdout.split())
    assert "--no-agents start no node agents (by default one runs per simulated node) --build-only" in text
    assert "(default: True)" not in text and "(default: False)" not in text


def test_a_port_pool_hands_out_each_free_port_of_its_range_once() -> None:
    lo = free_range(3, top=30000)  # below the ephemeral range, where outgoing connections take ports
    with socket.socket() as busy:
        # as a server takes it (an earlier test's connection in TIME_WAIT would refuse a plain bind)
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", lo + 1))
        busy.listen()
        taken = lo + 1
        pool = PortPool(lo, lo + 2)
        got = [pool.take(), pool.take()]
        assert taken not in got and len(set(got)) == 2 and all(lo <= p <= lo + 2 for p in got)
        with pytest.raises(StartError, match=f"no free port left in --port-range {lo}-{lo + 2}"):
            pool.take()


@pytest.mark.e2e
def test_up_with_a_port_range_listens_only_on_loopback_inside_it(tmp_path: Path) -> None:

    from central.localcluster.simkubelet import NodeSpec
    from central.localcluster.up import up

    why = build.unavailable()
    if why:
        pytest.skip(f"no real control plane here: {why}")
    lo = free_range(20, top=30000)
    cluster = up(tmp_path / "c", [NodeSpec("node-1", cpu="4", memory="8Gi", numa=1)], say=lambda _: None,
                 port_range=(lo, lo + 19))
    try:
        listening = {}
        for proc in cluster.sup.procs:
            for conn in listeners(proc.pid):
                listening[(proc.name, conn.laddr.port)] = conn.laddr.ip
            assert alive(proc.pid), f"{proc.name} exited: {proc.log.read_text(errors='replace')[-3000:]}"
        names = {name for name, _ in listening}
        assert {"etcd", "kube-apiserver", "kube-controller-manager", "caldera-admission", "caldera-controllers",
                "caldera-scheduler", "caldera-nodeagent-node-1"} <= names
        # gRPC binds 127.0.0.1 through a dual-stack socket, which shows the address IPv4-mapped
        assert {ip for ip in listening.values()} <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening
        assert [key for key in listening if not lo <= key[1] <= lo + 19] == []
    finally:
        down(tmp_path / "c")


def listeners(pid: int, tries: int = 5) -> list[Any]:
    """The listening inet sockets of process `pid` and its descendants. A loaded run here has
    seen psutil find no /proc entry for a process that was alive a moment before and after,
    so a process reported gone is asked again while it is still alive; a child that ends
    meanwhile is not a listener."""
    import psutil

    for _ in range(tries):
        try:
            family = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
            break
        except psutil.NoSuchProcess:
            if not alive(pid):
                return []  # gone: the caller's alive() check names it
            time.sleep(0.2)
    else:
        raise AssertionError(f"psutil cannot read process {pid}, which is alive")
    found = []
    for member in family:
        try:
            found += [c for c in member.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        except psutil.NoSuchProcess:
            if member.pid == pid:
                raise
    return found


def free_range(size: int, top: int = 40000) -> int:
    """The start of `size` consecutive ports free on loopback now, searched from `top` down."""
    for lo in range(top, top - 10000, -size):
        if not any(port_in_use(p) for p in range(lo, lo + size)):
            return lo
    pytest.skip(f"no run of {size} free loopback ports below {top}")
