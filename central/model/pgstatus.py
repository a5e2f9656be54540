"""A PodGroup's status as Volcano's Go types see it: compared semantically, written as Go writes it.

Operators built on Volcano's Go client (training-operator, KubeRay) read a PodGroup into
typed structs and write the whole object back: every field is `omitempty`, so `message: ""`,
`running: 0` or an empty condition list vanish on their write. Compared as raw JSON, each such
write looks like a change to the scheduler and each of the scheduler's writes looks like one
to them: two writers rewriting each other forever. Compared here as the Go types compare
(Volcano's `isPodGroupStatusUpdated`: equality on the typed status, conditions without their
session stamps), and written without empty fields, neither side sees a change that is not one.

    semantic(status) -> tuple     equal for statuses Volcano's scheduler would not rewrite
    condition_key(condition)      the same, of one condition
    as_written(status) -> dict    the status as the Go client serialises it (omitempty)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COUNTS = ("running", "succeeded", "failed")
STAMPED = frozenset({"transitionID", "lastTransitionTime"})  # every session stamps them anew


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == 0 and not isinstance(value, bool) or value == [] or value == {}


def condition_key(condition: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, v) for k, v in condition.items() if k not in STAMPED and not _empty(v)))


def semantic(status: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What Volcano's comparison sees: the phase as is ("" and "Pending" differ, as in Go),
    counts with 0 for missing, conditions in order without stamps or empty fields, and any
    other field by value."""
    status = status or {}
    counts = tuple(int(status.get(name) or 0) for name in COUNTS)
    conditions = tuple(condition_key(c) for c in status.get("conditions") or [] if isinstance(c, Mapping))
    rest = tuple(sorted((k, repr(v)) for k, v in status.items()
                        if k not in COUNTS and k not in ("phase", "conditions") and not _empty(v)))
    return str(status.get("phase") or ""), counts, conditions, rest


def as_written(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status without the fields Go's `omitempty` drops (empty strings, zero counts, empty
    lists), in conditions too."""
    out: dict[str, Any] = {}
    for key, value in status.items():
        if key == "conditions" and isinstance(value, list):
            value = [{k: v for k, v in c.items() if not _empty(v)} if isinstance(c, Mapping) else c for c in value]
        if not _empty(value):
            out[key] = value
    return out
