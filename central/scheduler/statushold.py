"""Statuses the sink holds back for a while, the newest handed over once the while is up.

Cycles come as pods arrive, several a second, and some statuses would be written on each:
- a Queue's (its allocated resources move with every bind): at most once per
  `QUEUE_STATUS_INTERVAL`, whatever changed, as Volcano's queue status writes come;
- a PodGroup's whose only change is a condition's message. JobValid refuses a gang whose pods
  are still being made with a message that counts them ("valid: 37, min: 100"), and gang's
  close reports "63/100 tasks in gang unschedulable" the same way: 9 writes per PodGroup in the
  bench's gang case, against Volcano's 3 (its cycles come a second apart). As for the pods'
  PodScheduled messages (`central.scheduler.podscheduled`), such a status goes at most once per
  condition interval; any other change (phase, counts, a condition's type, status or reason)
  goes at once.

Nothing held is lost: a later flush hands it over once its interval has passed, and the sink's
last flush at close hands over all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from central.model.pgstatus import semantic

Status = dict[str, Any]


def message_blind(status: Mapping[str, Any]) -> tuple[Any, ...]:
    """What Volcano's comparison sees of a status (`semantic`), the conditions' messages left out."""
    conditions = [{k: v for k, v in c.items() if k != "message"} if isinstance(c, Mapping) else c
                  for c in status.get("conditions") or ()]
    return semantic({**status, "conditions": conditions})


def never_urgent(status: Mapping[str, Any]) -> None:
    """Every change waits for its interval."""
    return None


class StatusHold:
    def __init__(self, interval: float, urgent: Callable[[Mapping[str, Any]], Any]):
        """`urgent`: the part of a status whose change goes at once; a status whose part is as
        the last one handed over's waits until `interval` has passed since that one."""
        self.interval, self.urgent = interval, urgent
        self._sent: dict[str, tuple[float, Any]] = {}  # key -> when, its urgent part (within the interval)
        self._held: dict[str, Status] = {}  # key -> the newest status held back

    def due(self, statuses: Mapping[str, Status], now: float, everything: bool = False) -> list[tuple[str, Status]]:
        """Of this flush's statuses and those held before, the ones to hand over now, in that
        order; with `everything`, all of them."""
        out: list[tuple[str, Status]] = []
        for key, status in statuses.items():
            sent, part = self._sent.get(key), self.urgent(status)
            if not everything and sent is not None and now < sent[0] + self.interval and part == sent[1]:
                self._held[key] = status
                continue
            self._held.pop(key, None)
            out.append((key, status))
            self._sent[key] = (now, part)
        for key in [k for k in self._held if everything or now >= self._sent[k][0] + self.interval]:
            status = self._held.pop(key)
            out.append((key, status))
            self._sent[key] = (now, self.urgent(status))
        # what was handed over longer ago than the interval holds nothing back
        for key in [k for k, (when, _) in self._sent.items() if now >= when + self.interval and k not in self._held]:
            del self._sent[key]
        return out
