"""Decayed usage, and the Queue annotation that keeps it across scheduler restarts.

Usage plugins (fairshare, admissionfairsharing) keep their tallies in the scheduler's memory
(`Handle.remember`), and, at most once per their interval, as a JSON record in an annotation
on each Queue: `{"lastUpdate": "<RFC 3339>", "usage": {"<key>": <value>, ...}}`. A scheduler
that starts with nothing in memory reads the records back (`QueueInfo.annotations`), so a
restart keeps what the cluster has used; a record that cannot be read counts as none (and is
reported as a fault of nothing: usage is advisory).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from central.errors import InputError
from central.model.fields import parse_time
from central.model.objects import QueueInfo


def half_life_factor(elapsed: float, half_life: float) -> float:
    """2^(-elapsed/half_life): what is left of usage after `elapsed` seconds (1 without decay)."""
    if half_life <= 0 or elapsed <= 0:
        return 1.0
    return math.pow(2.0, -elapsed / half_life)


@dataclass(frozen=True)
class UsageRecord:
    updated: datetime
    usage: dict[str, float]


def read_record(queue: QueueInfo, key: str) -> UsageRecord | None:
    """The record kept under annotation `key` on the Queue; None if absent or unreadable."""
    raw = queue.annotations.get(key)
    if not raw:
        return None
    try:
        data = json.loads(raw)
        usage = data["usage"]
        if not isinstance(usage, Mapping):
            return None
        values = {str(name): float(value) for name, value in usage.items()}
        if not all(math.isfinite(v) and v >= 0 for v in values.values()):
            return None
        return UsageRecord(parse_time(str(data["lastUpdate"]), key), values)
    except (ValueError, TypeError, KeyError, InputError):
        return None


def write_record(updated: datetime, usage: Mapping[str, float]) -> str:
    """The annotation value for `usage` as of `updated` (names sorted: equal usage, equal text)."""
    return json.dumps({"lastUpdate": updated.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "usage": {name: round(value, 3) for name, value in sorted(usage.items())}},
                      separators=(",", ":"))
