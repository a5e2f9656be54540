"""`caldera up` / `caldera down` on bad input and faults: one line, exit 2, nothing left."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

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
            for ip, port in listeners(proc.pid):
                listening[(proc.name, port)] = ip
            assert alive(proc.pid), f"{proc.name} exited: {proc.log.read_text(errors='replace')[-3000:]}"
        names = {name for name, _ in listening}
        assert {"etcd", "kube-apiserver", "kube-controller-manager", "caldera-admission", "caldera-controllers",
                "caldera-scheduler", "caldera-nodeagent-node-1"} <= names
        # gRPC binds 127.0.0.1 through a dual-stack socket, which shows the address IPv4-mapped
        assert {ip for ip in listening.values()} <= {"127.0.0.1", "::ffff:127.0.0.1"}, listening
        assert [key for key in listening if not lo <= key[1] <= lo + 19] == []
    finally:
        down(tmp_path / "c")


def listeners(pid: int) -> list[tuple[str, int]]:
    """The (address, port) of every listening TCP socket held by process `pid` or its
    descendants, read from /proc directly. psutil's process objects check the start time on
    every call, and on CI's loaded machine they reported a live process gone five times over."""
    family = {pid} | descendants(pid)
    inodes = set()
    for member in family:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{member}/fd").iterdir()]
        except OSError:  # it ended meanwhile: the caller's alive() check names it
            continue
        inodes |= {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
    return [address for inode, address in listening_tcp().items() if inode in inodes]


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def listening_tcp() -> dict[str, tuple[str, int]]:
    """Socket inode -> (address, port) for every TCP socket in LISTEN state (0A) on this host."""
    found = {}
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] != "0A":
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)  # the kernel prints each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            found[fields[9]] = (socket.inet_ntop(family, raw), int(port, 16))
    return found


def free_range(size: int, top: int = 40000) -> int:
    """The start of `size` consecutive ports free on loopback now, searched from `top` down."""
    for lo in range(top, top - 10000, -size):
        if not any(port_in_use(p) for p in range(lo, lo + size)):
            return lo
    pytest.skip(f"no run of {size} free loopback ports below {top}")
