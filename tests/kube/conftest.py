"""Fixtures: a real kube-apiserver (tests/kube/realapi.py) and the `eventually` wait."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(check: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> object:
    """Poll `check` until it returns something truthy (tests wait on threads, never on time)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


from tests.kube.realapi import real, real_api  # noqa: E402,F401  (fixtures)
