"""Batch resources: what online pods leave unused, offered to offline pods.

As Volcano's agent does: every sample, oversold = (allocatable - usage of online pods) x
ratio; the figure published is a weighted average of the last few samples whose weights
double towards the newest, so it follows load quickly but does not flap on one spike.
Offline (BE) pods request it as kubernetes.io/batch-cpu (millicores) and
kubernetes.io/batch-memory (bytes); the QoS strategies keep online pods safe when they
grow back into it. Nothing is offered from unknown usage: while a figure is unknown its batch
figure is None (unset in the report), and its history restarts when it is known again.
"""

from __future__ import annotations

from collections import deque


class BatchEstimator:
    def __init__(self, ratio_percent: float = 60.0, samples: int = 5):
        if not 0 <= ratio_percent <= 100:
            raise ValueError("ratio_percent must be within 0..100")
        self.ratio = ratio_percent / 100
        self._cpu: deque[float] = deque(maxlen=samples)
        self._memory: deque[float] = deque(maxlen=samples)

    def update(self, allocatable_cores: float, allocatable_bytes: float, online_cores: float | None,
               online_bytes: float | None) -> tuple[int | None, int | None]:
        """Add a sample; return (batch millicores, batch bytes) to publish now, None where unknown."""
        return (self._add(self._cpu, allocatable_cores, online_cores, 1000),
                self._add(self._memory, allocatable_bytes, online_bytes, 1))

    def _add(self, history: deque[float], allocatable: float, online: float | None, unit: float) -> int | None:
        if online is None:
            history.clear()
            return None
        history.append(max(0.0, allocatable - online) * self.ratio * unit)
        return int(_smoothed(history))


def _smoothed(values: deque[float]) -> float:
    weights = [2.0 ** i for i in range(len(values))]  # newest weighs most
    return sum(w * v for w, v in zip(weights, values)) / sum(weights) if values else 0.0
