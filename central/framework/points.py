"""Extension points and how plugin answers combine, exactly as Volcano combines them.

One table says, for every point, which `enable*` flag gates it; `Points` holds, per point,
the participating plugin methods grouped by tier, and one small function per combination
rule does the rest (Volcano copies the same tier loop ~40 times).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

from central.framework.plugin import REJECT, AccountingPlugin, Plugin

# point -> enable flag (None: always on)
POINT_FLAGS: dict[str, str | None] = {
    "job_order": "enableJobOrder",
    "queue_order": "enableQueueOrder",
    "task_order": "enableTaskOrder",
    "victim_queue_order": None,
    "job_valid": None,
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "job_starving": "enableJobStarving",
    "job_enqueueable": "enableJobEnqueued",
    "job_enqueued": "enableJobEnqueued",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "preemptive": "enablePreemptive",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "can_give_up": None,
    "victim_tasks": "enabledVictim",
    "predicate": "enablePredicate",
    "static_predicate": "enablePredicate",
    "row_predicate": "enablePredicate",
    "node_order": "enableNodeOrder",
    "batch_node_order": "enableNodeOrder",
    "hypernode_gradients": "enabledHyperNodeGradient",
    "hypernode_order": "enabledHyperNodeOrder",
    "on_allocate": None,
    "on_deallocate": None,
    "on_session_close": None,
}

Tiers = list[list[Callable[..., Any]]]
_CONTRACT = {name for base in (Plugin, AccountingPlugin) for name in vars(base)}  # the framework's own methods


def check_plugin_class(cls: type[Plugin]) -> None:
    """Every public method of a plugin is an extension point (or one of the framework's base
    classes); anything else would never be called, so it is refused when the class is
    registered. Helpers are private (a leading underscore)."""
    for klass in cls.__mro__:
        if klass in (Plugin, AccountingPlugin, object):
            continue
        for attr, value in vars(klass).items():
            if attr.startswith("_") or attr in POINT_FLAGS or attr in _CONTRACT:
                continue
            if callable(value) or isinstance(value, (classmethod, staticmethod)):
                close = difflib.get_close_matches(attr, POINT_FLAGS, n=1)
                hint = f"did you mean {close[0]}?" if close else f"extension points: {', '.join(POINT_FLAGS)}"
                raise TypeError(f"plugin {cls.name or cls.__name__}: method {klass.__name__}.{attr} matches no "
                                f"extension point ({hint}); name a helper with a leading underscore")


# (plugin class, option) per tier -> point -> per tier, the positions of the plugins answering it.
# Which plugins answer depends only on their classes and options, so it is worked out once per
# configuration, not every session; the key keeps the options alive, so their ids stay theirs.
_LAYOUTS: dict[tuple[tuple[tuple[type, int], ...], ...], tuple[Any, dict[str, list[list[int]]]]] = {}


def _layout(tiers: Sequence[Sequence[Plugin]]) -> dict[str, list[list[int]]]:
    key = tuple(tuple((type(p), id(p.option)) for p in tier) for tier in tiers)
    found = _LAYOUTS.get(key)
    if found is None:
        layout = {point: [[i for i, p in enumerate(tier)
                           if hasattr(type(p), point) and (flag is None or p.option.enabled(flag))] for tier in tiers]
                  for point, flag in POINT_FLAGS.items()}
        found = _LAYOUTS[key] = ([p.option for tier in tiers for p in tier], layout)
    return found[1]


class Points:
    def __init__(self, tiers: Sequence[Sequence[Plugin]]):
        self.by_point: dict[str, Tiers] = {
            point: [[getattr(tier[i], point) for i in positions] for tier, positions in zip(tiers, per_tier)]
            for point, per_tier in _layout(tiers).items()}
        self.flat = {point: [fn for tier in tiers for fn in tier] for point, tiers in self.by_point.items()}

    def takes_part(self, point: str, plugin: str) -> bool:
        """Does the named plugin answer at this point (present, and its flag on)?"""
        return any(getattr(fn, "__self__", None) is not None and fn.__self__.name == plugin for fn in self.flat[point])

    # --- combination rules ------------------------------------------------------------------

    def order(self, point: str, left: Any, right: Any, *context: Any) -> int:
        """First non-zero answer wins; 0 when every plugin abstains."""
        for fn in self.flat[point]:
            result = fn(left, right, *context)
            if result:
                return result
        return 0

    def all_true(self, point: str, *args: Any) -> bool:
        return all(fn(*args) for fn in self.flat[point])

    def any_true(self, point: str, *args: Any) -> bool:
        return any(fn(*args) for fn in self.flat[point])

    def vote(self, point: str, *args: Any) -> bool:
        """Any Reject fails; the first tier with a Permit passes; all abstaining passes."""
        for tier in self.by_point[point]:
            permitted = False
            for fn in tier:
                result = fn(*args)
                if result == REJECT:
                    return False
                permitted = permitted or result > 0
            if permitted:
                return True
        return True

    def first_tier_all(self, point: str, *args: Any) -> bool:
        """AND within the first tier that has any plugin; False when none has (JobStarving)."""
        for tier in self.by_point[point]:
            if tier:
                return all(fn(*args) for fn in tier)
        return False

    def first_failure(self, point: str, *args: Any) -> Any:
        for fn in self.flat[point]:
            result = fn(*args)
            if result is not None:
                return result
        return None

    def notify(self, point: str, *args: Any) -> None:
        for fn in self.flat[point]:
            fn(*args)

    def victims(self, point: str, actor: Any, candidates: list[Any]) -> list[Any]:
        """Per tier: abstainers (None) are skipped, an empty answer ends the tier (the next
        tier is tried), the rest intersect; the first tier with victims decides."""
        for tier in self.by_point[point]:
            chosen: list[Any] | None = None
            for fn in tier:
                answer = fn(actor, candidates)
                if answer is None:
                    continue
                if not answer:
                    chosen = None
                    break
                ids = {id(v) for v in answer}
                chosen = answer if chosen is None else [v for v in chosen if id(v) in ids]
            if chosen is not None:
                return chosen
        return []

    def union_first_tier(self, point: str, *args: Any) -> list[tuple[Any, str]]:
        """(item, reason) pairs from every plugin of the first tier that yields any; an item
        named twice keeps the first reason (Volcano's VictimTasks)."""
        for tier in self.by_point[point]:
            chosen: dict[int, tuple[Any, str]] = {}
            for fn in tier:
                for item, reason in fn(*args):
                    chosen.setdefault(id(item), (item, reason))
            if chosen:
                return list(chosen.values())
        return []
