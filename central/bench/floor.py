"""The physical floor `caldera bench` compares a session with: a compiled greedy placement of
the same pods on the same nodes, with feasibility (every resource and the pod count) and one
score (most-allocated, the binpack plugin's idea), scanning every node for every pod.

It is C, compiled once with the system's C compiler into the user's cache and loaded with
ctypes: no new dependency (numba would bring llvmlite, some 50 MB, for a benchmark kernel).
Where no compiler is found `unavailable()` says so and the bench prints no ratio.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

SOURCE = r"""
#include <stdint.h>
/* For each pod in order: the feasible node (idle >= request in every dimension, a pod slot
   left) with the highest most-allocated score after placing it; ties to the lowest index.
   Charges the node. Returns how many pods were placed; node[p] = -1 where none fits. */
int64_t place(int64_t nodes, int64_t dims, double *idle, const double *alloc, int64_t *slots,
              int64_t pods, const double *req, int64_t *node) {
    int64_t placed = 0;
    for (int64_t p = 0; p < pods; p++) {
        const double *r = req + p * dims;
        int64_t best = -1;
        double best_score = -1e300;
        for (int64_t n = 0; n < nodes; n++) {
            if (slots[n] <= 0) continue;
            double *free = idle + n * dims;
            const double *cap = alloc + n * dims;
            double score = 0.0;
            int fits = 1;
            for (int64_t d = 0; d < dims; d++) {
                double left = free[d] - r[d];
                if (left < 0) { fits = 0; break; }
                if (cap[d] > 0) score += 1.0 - left / cap[d];
            }
            if (fits && score > best_score) { best = n; best_score = score; }
        }
        node[p] = best;
        if (best >= 0) {
            double *free = idle + best * dims;
            for (int64_t d = 0; d < dims; d++) free[d] -= r[d];
            slots[best]--;
            placed++;
        }
    }
    return placed;
}
"""

_lib: ctypes.CDLL | None = None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "caldera" / "floor"


def unavailable() -> str | None:
    """Why the floor cannot be compiled here, or None."""
    return None if shutil.which("cc") else "no C compiler (cc) on PATH: the compiled floor is not measured"


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
        target = _cache_dir() / f"floor-{digest}.so"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                source = Path(tmp) / "floor.c"
                source.write_text(SOURCE)
                built = Path(tmp) / "floor.so"
                subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", "-o", str(built), str(source)],
                               check=True, capture_output=True, timeout=120)
                os.replace(built, target)  # atomic: a concurrent bench sees the whole library or none
        lib = ctypes.CDLL(str(target))
        f64 = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
        i64 = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS")
        lib.place.argtypes = [ctypes.c_int64, ctypes.c_int64, f64, f64, i64, ctypes.c_int64, f64, i64]
        lib.place.restype = ctypes.c_int64
        _lib = lib
    return _lib


def place(idle: np.ndarray, alloc: np.ndarray, slots: np.ndarray, requests: np.ndarray,
          repeat: int = 3) -> tuple[int, float, np.ndarray]:
    """(pods placed, CPU seconds, node index per pod or -1) for `requests` (pods x dims) on nodes
    with `idle` and `alloc` (nodes x dims) and `slots` free pod slots; the inputs are copied.
    The seconds are the least of `repeat` runs: one run of a few milliseconds moved 2x between
    runs of the bench, and the ratios to it with it."""
    lib = _load()
    alloc = np.ascontiguousarray(alloc, dtype=np.float64)
    requests = np.ascontiguousarray(requests, dtype=np.float64)
    nodes = np.empty(len(requests), dtype=np.int64)
    best = float("inf")
    for _ in range(repeat):
        free = np.ascontiguousarray(idle, dtype=np.float64).copy()
        left = np.ascontiguousarray(slots, dtype=np.int64).copy()
        started = time.process_time()  # CPU seconds: a shared machine's wall clock says more about the others
        placed = lib.place(len(free), free.shape[1], free, alloc, left, len(requests), requests, nodes)
        best = min(best, time.process_time() - started)
    return int(placed), best, nodes
