"""Build Volcano's e2e suites, vcctl and components from a pinned commit, once, into the cache.

Nothing of Volcano's lives in this repository: the source comes from a local clone of its
public repository (`--volcano-repo PATH` or CALDERA_VOLCANO_REPO), exported with `git archive`
at `versions.VOLCANO` into `$XDG_CACHE_HOME/caldera/volcano/<commit>/src`; its go.mod replaces
`volcano.sh/apis` with its own `staging/` copy and every other module comes from the Go proxy.
Builds run at the lowest priority with at most two compile jobs: the machines this runs on
are shared, and the whole build is about 30 CPU-minutes the first time.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from central.localcluster import build as cpbuild
from central.localcluster import versions
from central.localcluster.build import BuildError, Progress

REPO_ENV = "CALDERA_VOLCANO_REPO"
REPO_URL = "https://github.com/volcano-sh/volcano"

# Volcano's e2e suites this harness knows how to run (test/e2e/<suite> in its repository).
SUITES = ("jobp", "jobseq", "schedulingbase", "schedulingaction", "admission", "vcctl", "cronjob",
          "schedulinggates", "hypernode")
# binary name -> package in Volcano's module.
COMPONENTS = {
    "vc-scheduler": "./cmd/scheduler",
    "vc-controller-manager": "./cmd/controller-manager",
    "vc-webhook-manager": "./cmd/webhook-manager",
    "vcctl": "./cmd/cli",
}
GINKGO = "github.com/onsi/ginkgo/v2/ginkgo"


@dataclass(frozen=True)
class Build:
    """Where the built tree lives: the exported source (CRDs, webhook templates, the CI
    scheduler configuration are read from it) and the binaries."""

    root: Path

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def component(self, name: str) -> Path:
        return self.bin / name

    def suite(self, name: str) -> Path:
        return self.bin / f"e2e-{name}.test"

    @property
    def ginkgo(self) -> Path:
        return self.bin / "ginkgo"


def cache_root(commit: str = versions.VOLCANO) -> Path:
    return cpbuild.cache_dir().parent / "volcano" / commit[:12]


def find_repo(explicit: Path | None = None) -> Path:
    """The clone of Volcano's repository to export from; BuildError says exactly what to provide."""
    given = explicit or (Path(os.environ[REPO_ENV]) if os.environ.get(REPO_ENV) else None)
    if given is None:
        raise BuildError(f"Volcano's repository is needed to build its e2e suites: clone {REPO_URL} "
                         f"(it must contain commit {versions.VOLCANO[:12]}) and pass --volcano-repo PATH "
                         f"or set {REPO_ENV}=PATH")
    if shutil.which("git") is None:
        raise BuildError("git not found on PATH (needed to export Volcano's source)")
    check = subprocess.run(["git", "--git-dir", str(_git_dir(given)), "cat-file", "-e",
                            f"{versions.VOLCANO}^{{commit}}"], capture_output=True, text=True)
    if check.returncode != 0:
        raise BuildError(f"{given} is not a clone of {REPO_URL} holding commit {versions.VOLCANO[:12]} "
                         f"(run `git -C {given} fetch origin` or clone it again)")
    return given


def _git_dir(repo: Path) -> Path:
    """A work tree's .git, or the path itself for a bare repository."""
    return repo / ".git" if (repo / ".git").exists() else repo


def missing(root: Path | None = None, suites: tuple[str, ...] = SUITES) -> list[str]:
    """Binaries not yet in the cache (an empty list: nothing to build)."""
    built = Build(root or cache_root())
    paths = [built.component(n) for n in COMPONENTS] + [built.ginkgo] + [built.suite(s) for s in suites]
    return [p.name for p in paths if not p.exists()]


def ensure(repo: Path | None = None, suites: tuple[str, ...] = SUITES, progress: Progress | None = None) -> Build:
    """The build, made first where anything is missing. Raises BuildError."""
    built = Build(cache_root())
    if not missing(built.root, suites):
        return built
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise BuildError(f"unknown suite {unknown[0]!r}; choose from {', '.join(SUITES)}")
    source = find_repo(repo) if not (built.src / "go.mod").exists() else None
    why = cpbuild.go_unavailable()
    if why:
        raise BuildError(why)
    say = progress or (lambda line: print(line, flush=True))
    built.root.mkdir(parents=True, exist_ok=True)
    with open(built.root / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another build of Volcano's suites ({built.root}) ...")
            fcntl.flock(lock, fcntl.LOCK_EX)
        _build(built, source, suites, say)
    return built


def _build(built: Build, source: Path | None, suites: tuple[str, ...], say: Progress) -> None:
    log = built.root / "build.log"
    env = dict(os.environ, CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-mod=mod -p=2 -buildvcs=false")
    started = time.monotonic()
    with open(log, "a") as out:
        if not (built.src / "go.mod").exists():
            assert source is not None
            _export(source, built.src, out, log)
        staging = built.root / "bin.partial"
        staging.mkdir(exist_ok=True)
        built.bin.mkdir(exist_ok=True)
        steps: list[tuple[str, list[str]]] = []
        for name, package in COMPONENTS.items():
            steps.append((name, ["go", "build", "-v", "-o", str(staging / name), package]))
        steps.append(("ginkgo", ["go", "build", "-v", "-o", str(staging / "ginkgo"), GINKGO]))
        for suite in suites:
            name = built.suite(suite).name
            steps.append((name, ["go", "test", "-c", "-v", "-o", str(staging / name), f"./test/e2e/{suite}"]))
        todo = [(n, cmd) for n, cmd in steps if not (built.bin / n).exists()]
        if not todo:  # another run built them while this one waited for the lock
            return
        say(f"building {len(todo)} of Volcano's binaries at {versions.VOLCANO[:12]} (first time only; "
            f"about 30 CPU-minutes; log: {log})")
        for name, cmd in todo:
            cpbuild._run(["nice", "-n", "19", *cmd], built.src, out, env, log, f"build {name}",
                         say=say, started=started)
            os.replace(staging / name, built.bin / name)  # only finished binaries reach bin/
            say(f"  built {name} ({time.monotonic() - started:.0f} s)")
    say(f"Volcano's suites are built in {built.bin}")


def _export(repo: Path, src: Path, out: IO[str], log: Path) -> None:
    """`git archive <commit> | tar -x` into src, through a partial folder renamed at the end."""
    partial = src.with_name("src.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = subprocess.Popen(["git", "--git-dir", str(_git_dir(repo)), "archive", versions.VOLCANO],
                               stdout=subprocess.PIPE, stderr=out)
    untar = subprocess.run(["tar", "-x", "-C", str(partial)], stdin=archive.stdout, stderr=out)
    assert archive.stdout is not None
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise BuildError(f"cannot export Volcano's source at {versions.VOLCANO[:12]} from {repo}; see {log}")
    os.replace(partial, src)
