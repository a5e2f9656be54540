"""PodGroup statuses whose only change is a condition's message, held back for a while.

JobValid refuses a gang whose pods are still being made, each cycle, with a message that
counts them ("valid: 37, min: 100"); gang's close reports "63/100 tasks in gang unschedulable"
the same way. Without a limit such a PodGroup is written every cycle while an operator creates
its pods: 9 writes per PodGroup in the bench's gang case, against Volcano's 3 (its cycles come a
second apart, Caldera's as pods arrive). As for the pods' PodScheduled messages
(`central.scheduler.podscheduled`), a status that differs from the last one handed over only in
its conditions' messages goes at most once per interval, the newest then. Any other change
(phase, counts, a condition's type, status or reason) goes at once, and nothing held is lost:
a later flush hands it over once its interval has passed, and the sink's last flush at close
hands over all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.model.pgstatus import semantic

Status = dict[str, Any]


def message_blind(status: Mapping[str, Any]) -> tuple[Any, ...]:
    """What Volcano's comparison sees of a status (`semantic`), the conditions' messages left out."""
    conditions = [{k: v for k, v in c.items() if k != "message"} if isinstance(c, Mapping) else c
                  for c in status.get("conditions") or ()]
    return semantic({**status, "conditions": conditions})


class MessageHold:
    def __init__(self, interval: float):
        self.interval = interval
        self._sent: dict[str, tuple[float, tuple[Any, ...]]] = {}  # key -> when, what (within the interval)
        self._held: dict[str, Status] = {}  # key -> the newest status held back

    def due(self, statuses: Mapping[str, Status], now: float, everything: bool = False) -> list[tuple[str, Status]]:
        """Of this flush's statuses and those held before, the ones to hand over now, in that
        order; with `everything`, all of them."""
        out: list[tuple[str, Status]] = []
        for key, status in statuses.items():
            sent, seen = self._sent.get(key), None
            if not everything and sent is not None and now < sent[0] + self.interval:
                seen = message_blind(status)
                if seen == sent[1]:
                    self._held[key] = status
                    continue
            self._held.pop(key, None)
            out.append((key, status))
            self._sent[key] = (now, seen if seen is not None else message_blind(status))
        for key in [k for k in self._held if everything or now >= self._sent[k][0] + self.interval]:
            status = self._held.pop(key)
            out.append((key, status))
            self._sent[key] = (now, message_blind(status))
        # what was handed over longer ago than the interval holds nothing back
        for key in [k for k, (when, _) in self._sent.items() if now >= when + self.interval and k not in self._held]:
            del self._sent[key]
        return out
