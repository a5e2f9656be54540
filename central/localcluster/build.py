"""Build the control plane's binaries from Go modules, once, into the user's cache.

`binaries()` returns the paths of kube-apiserver, kube-controller-manager and etcd (and
kube-scheduler or kubectl when asked), building what is missing. Builds live under
`$XDG_CACHE_HOME/caldera/go/<version>/` (default `~/.cache`), never in the repository;
a file lock makes a second test run wait for the first build instead of building again;
a person sees one progress line every few seconds while the Go compiler works.

The kubernetes module is not meant to be imported: its go.mod points its ~30 staging
modules at `./staging/...`. The small build module written here requires it and replaces
each staging module with its released twin (v1.N.P pairs with v0.N.P), read from the
kubernetes go.mod itself so the list can never drift from the release.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from central.localcluster import versions

Progress = Callable[[str], None]

# name -> Go package, within the build module's graph.
PACKAGES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    "etcd": "./etcd",
}
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager")

_TOOLS_GO = """//go:build tools

// Package tools pins the commands built from k8s.io/kubernetes (go mod tidy keeps them).
package tools

import (
{imports})
"""

# etcd's own main lives in its root module, which k8s.io/kubernetes does not require; its
# server module (which it does require, so versions agree) exposes the same entry point.
_ETCD_MAIN = """package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
"""


class BuildError(Exception):
    """The control plane cannot be built here; the message is one line for a person."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "caldera" / "go"


def go_unavailable() -> str | None:
    """Why the Go toolchain cannot build the control plane here, or None when it can."""
    go = shutil.which("go")
    if go is None:
        return "Go toolchain not found on PATH (the real control plane is built from Go modules; needs Go >= %d.%d)" % versions.GO_MIN
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        return f"cannot run {go}: {err}"
    found = re.match(r"go(\d+)\.(\d+)", out)
    if not found or (int(found[1]), int(found[2])) < versions.GO_MIN:
        return f"{go} is {out or 'of unknown version'}; the control plane needs Go >= %d.%d" % versions.GO_MIN
    return None


def unavailable(names: Iterable[str] = CONTROL_PLANE) -> str | None:
    """Why the named binaries can be neither found in the cache nor built, or None."""
    root = cache_dir() / versions.KUBERNETES / "bin"
    return None if all((root / n).exists() for n in names) else go_unavailable()


def binaries(names: Iterable[str] = CONTROL_PLANE, progress: Progress | None = None) -> dict[str, Path]:
    """Paths of the named binaries, built first where missing. Raises BuildError."""
    names = list(names)
    unknown = [n for n in names if n not in PACKAGES]
    if unknown:
        raise BuildError(f"unknown control-plane binary {unknown[0]!r}; choose from {', '.join(PACKAGES)}")
    root = cache_dir() / versions.KUBERNETES
    paths = {name: root / "bin" / name for name in names}
    if all(p.exists() for p in paths.values()):
        return paths
    why = go_unavailable()
    if why:
        raise BuildError(why)
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another build of the control plane ({root}) ...")
            fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [n for n, p in paths.items() if not p.exists()]
        if missing:
            _build(root, missing, say)
    return paths


def _build(root: Path, names: list[str], say: Progress) -> None:
    src = root / "src"
    log = root / "build.log"
    env = dict(os.environ, CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    started = time.monotonic()
    say(f"building {', '.join(names)} from k8s.io/kubernetes {versions.KUBERNETES} (first time only; "
        f"several minutes on 2 cores; log: {log})")
    with open(log, "a") as out:
        if not (src / "go.sum").exists():
            _write_module(src, out, env)
            _run(["go", "mod", "tidy"], src, out, env, log, "go mod tidy")
        kube = versions.KUBERNETES
        minor = kube.lstrip("v").split(".")[1]
        ldflags = ("-s -w -X k8s.io/component-base/version.gitVersion=" + kube +
                   " -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=" + minor +
                   " -X k8s.io/component-base/version.gitTreeState=clean")
        staging = root / "bin.partial"
        staging.mkdir(exist_ok=True)
        cmd = ["go", "build", "-v", "-trimpath", "-ldflags", ldflags, "-o", str(staging) + "/",
               *(PACKAGES[n] for n in names)]
        _run(cmd, src, out, env, log, "go build", say=say, started=started)
        (root / "bin").mkdir(exist_ok=True)
        for name in names:  # rename last, so a killed build never leaves a half-written binary in bin/
            os.replace(staging / name, root / "bin" / name)
    say(f"built {', '.join(names)} in {time.monotonic() - started:.0f} s")


def _write_module(src: Path, out: TextIO, env: dict[str, str]) -> None:
    src.mkdir(parents=True, exist_ok=True)
    info = subprocess.run(["go", "mod", "download", "-json", f"k8s.io/kubernetes@{versions.KUBERNETES}"],
                          cwd=src, env=env, capture_output=True, text=True)
    out.write(info.stdout + info.stderr)
    try:
        gomod = Path(json.loads(info.stdout)["GoMod"]).read_text()
    except (ValueError, KeyError, OSError):
        raise BuildError(f"cannot download k8s.io/kubernetes@{versions.KUBERNETES}: "
                         f"{(info.stderr or info.stdout).strip().splitlines()[-1:] or ['no answer']}") from None
    staging = sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", gomod, re.M)))
    go_line = re.search(r"^go (\S+)", gomod, re.M)
    tag = versions.staging_version()
    replaces = "".join(f"\t{m} => {m} {tag}\n" for m in staging)
    (src / "go.mod").write_text(
        "module caldera.local/controlplane\n\n"
        f"go {go_line[1] if go_line else '1.26.0'}\n\n"
        "godebug default=go1.26\n\n"
        f"require k8s.io/kubernetes {versions.KUBERNETES}\n\n"
        f"replace (\n{replaces})\n")
    imports = "".join(f'\t_ "{p}"\n' for p in PACKAGES.values() if not p.startswith("."))
    (src / "tools.go").write_text(_TOOLS_GO.format(imports=imports))
    (src / "etcd").mkdir(exist_ok=True)
    (src / "etcd" / "main.go").write_text(_ETCD_MAIN)


def _run(cmd: list[str], cwd: Path, out: TextIO, env: dict[str, str], log: Path, what: str,
         say: Progress | None = None, started: float = 0.0) -> None:
    """Run a go command into the log; with `say`, a progress line every 20 s."""
    out.write(f"\n$ {' '.join(cmd)}\n")
    out.flush()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    compiled, last = 0, time.monotonic()
    tail: list[str] = []
    for line in proc.stdout:
        out.write(line)
        tail = (tail + [line.rstrip()])[-5:]
        compiled += 1
        if say and time.monotonic() - last >= 20:
            last = time.monotonic()
            say(f"  ... {what}: {compiled} packages so far, {last - started:.0f} s")
    if proc.wait() != 0:
        out.flush()
        detail = next((t for t in reversed(tail) if t), "no output")
        raise BuildError(f"{what} failed ({detail}); see {log}")
