"""The one way tests wait: poll a check until it holds (tests wait on conditions, never on time).
The default timeout is generous because a loaded CI machine is slow; a passing wait costs no more."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def eventually(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition",
               interval: float = 0.01) -> Any:
    """Poll `check` until it returns something truthy and return that; the assertion names
    what never happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
