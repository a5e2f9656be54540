"""A fixed-size ring of samples summarised as last / average / p95 (no numpy in the agent)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Stat:
    last: float = 0.0
    avg: float = 0.0
    p95: float = 0.0


class Window:
    def __init__(self, size: int) -> None:
        self._samples: deque[float] = deque(maxlen=max(1, size))

    def add(self, value: float) -> None:
        self._samples.append(value)

    def stat(self) -> Stat | None:
        """None while there is no sample: unknown, never zero."""
        if not self._samples:
            return None
        ordered = sorted(self._samples)
        p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
        return Stat(self._samples[-1], sum(ordered) / len(ordered), p95)

    def __len__(self) -> int:
        return len(self._samples)
