"""`helm`, built once from its Go module (helm.sh/helm/v3 at versions.HELM) into the user's cache.

The chart tests render `charts/caldera` with the real helm; like the control plane, it is
built, never downloaded as a binary, and never lives in the repository. Only the e2e half
builds it (`cached_helm` lets the other half use a build that is already there).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from central.localcluster import versions
from central.localcluster.build import BuildError, Progress, _run, cache_dir, go_unavailable

MODULE = "helm.sh/helm/v3/cmd/helm"


def cached_helm() -> Path | None:
    """The path of helm at versions.HELM if it is built already, else None (builds nothing)."""
    binary = cache_dir() / "helm" / versions.HELM / "helm"
    return binary if binary.exists() else None


def helm_binary(progress: Progress | None = None) -> Path:
    """The path of helm at versions.HELM, built first if missing. Raises BuildError."""
    root = cache_dir() / "helm" / versions.HELM
    binary = root / "helm"
    if binary.exists():
        return binary
    why = go_unavailable()
    if why:
        raise BuildError(why)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second test run waits for the first build
        if not binary.exists():
            log = root / "build.log"
            env = dict(os.environ, GOBIN=str(root), GOFLAGS="-mod=mod", CGO_ENABLED="0")
            with open(log, "w") as out:
                _run(["go", "install", f"{MODULE}@{versions.HELM}"], root, out, env, log,
                     f"building helm {versions.HELM}", progress, time.monotonic())
    return binary
