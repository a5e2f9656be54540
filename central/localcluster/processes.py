"""The processes `caldera up` starts, recorded in DIR/state.json so `caldera down` (or a
failed start) stops exactly those and nothing else."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE = "state.json"


class StartError(Exception):
    """A component did not start; the message is one line naming it and its log."""


@dataclass
class Process:
    name: str
    pid: int
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PortPool:
    """The loopback ports a cluster's processes listen on: any free one, or (on a shared host
    with a port policy, `caldera up --port-range LO-HI`) only free ones in [lo, hi]."""

    def __init__(self, lo: int = 0, hi: int = 0):
        self.lo, self.hi = lo, hi
        self.given: set[int] = set()

    def take(self) -> int:
        """A port free now and not handed out before; StartError when the range is spent."""
        if not self.lo:
            port = free_port()
            self.given.add(port)
            return port
        for port in range(self.lo, self.hi + 1):
            if port not in self.given and not port_in_use(port):
                self.given.add(port)
                return port
        raise StartError(f"no free port left in --port-range {self.lo}-{self.hi}: "
                         f"{len(self.given)} given out, the rest in use; widen the range")

    def allows(self, port: int) -> bool:
        return not self.lo or self.lo <= port <= self.hi


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class Supervisor:
    """Starts processes in their own session (they outlive `caldera up`), logs each to
    DIR/logs/NAME.log, and keeps DIR/state.json current."""

    def __init__(self, directory: Path, ports: PortPool | None = None):
        self.dir = directory
        self.ports = ports or PortPool()
        self.logs = directory / "logs"
        self.procs: list[Process] = [Process(p["name"], p["pid"], Path(p["log"])) for p in _read_state(directory)]

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with open(log, "ab") as out:
            try:
                popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=env, cwd=self.dir)
            except OSError as err:
                raise StartError(f"{name} did not start: {err.strerror or err} ({argv[0]})") from None
        proc = Process(name, popen.pid, log)
        self.procs.append(proc)
        self._save()
        return proc

    def wait_ready(self, proc: Process, ready: Callable[[], bool], timeout: float) -> None:
        """Poll `ready` until true; the process exiting or the timeout is a StartError."""
        deadline = time.monotonic() + timeout
        while True:
            if not alive(proc.pid):
                raise StartError(f"{proc.name} exited during start-up; log: {proc.log}{_last_line(proc.log)}")
            try:
                if ready():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise StartError(f"{proc.name} not ready after {timeout:.0f} s; log: {proc.log}{_last_line(proc.log)}")
            time.sleep(0.2)

    def cpu(self) -> dict[int, tuple[str, float]]:
        """pid -> (name, CPU seconds so far) of each of its processes still running."""
        out = {}
        for proc in self.procs:
            seconds = cpu_seconds(proc.pid)
            if seconds is not None:
                out[proc.pid] = (proc.name, seconds)
        return out

    def stop(self, name: str, sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
        """Stop one process (and its process group) by name."""
        for proc in [p for p in self.procs if p.name == name]:
            _terminate(proc.pid, sig, grace)
            self.procs.remove(proc)
        self._save()

    def stop_all(self, grace: float = 10.0, say: Callable[[str], None] | None = None) -> None:
        # Reverse start order: Caldera's components go before the apiserver, etcd last.
        for proc in reversed(self.procs):
            if say is not None and alive(proc.pid):
                say(f"stopping {proc.name} (pid {proc.pid}): waiting up to {grace:.0f} s for it to exit after SIGTERM")
            _terminate(proc.pid, signal.SIGTERM, grace)
        self.procs = []
        self._save()

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        data = [{"name": p.name, "pid": p.pid, "log": str(p.log)} for p in self.procs]
        tmp = self.dir / (STATE + ".tmp")
        tmp.write_text(json.dumps({"processes": data}, indent=1))
        os.replace(tmp, self.dir / STATE)


def _read_state(directory: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads((directory / STATE).read_text())
        return [p for p in data.get("processes", []) if isinstance(p, dict) and isinstance(p.get("pid"), int)]
    except (OSError, ValueError, AttributeError):
        return []


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a live process has used (None when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of this process counts as gone
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if status == "Z":
            os.waitpid(pid, os.WNOHANG)
            return False
    except (OSError, IndexError, ChildProcessError):
        pass
    return True


def _terminate(pid: int, sig: int, grace: float) -> None:
    """Signal the process group `pid` leads, then SIGKILL what is left after `grace`."""
    for s, wait in ((sig, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, s)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not alive(pid):
            return


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f" (last line: {lines[-1][:300]})" if lines else ""
