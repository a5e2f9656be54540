"""Which plugin methods answer each extension point in a session, and the combination rules.

`Points` holds, per point (`central.framework.extension`), the answering plugins' methods
in tier order: a typed list, or per tier where the point's rule looks at tiers. The rules
are small functions over those lists (Volcano copies the same tier loop ~40 times); the
session's orderings inline theirs, since they run for every heap comparison.
"""

# mypy: disable-error-code="type-abstract"
# (the Protocols are passed as keys to look their plugins up, never instantiated)

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from central.framework import extension as ext
from central.framework.extension import POINTS, REJECT
from central.framework.plugin import AccountingPlugin, Plugin
from central.framework.status import ALLOWED, Status

if TYPE_CHECKING:
    import numpy as np

    from central.framework.rowstate import RowState
    from central.framework.status import Check
    from central.model.objects import JobInfo, PodTemplate, QueueInfo, TaskInfo
    from central.model.subgroups import SubGroup
    from central.model.topology import HyperNode

P = TypeVar("P")
V = TypeVar("V")
_METHODS = {method: name for name, spec in POINTS.items() for method in spec.methods}
# the framework's own members, which no point's method is
_CONTRACT = {name for base in (Plugin, AccountingPlugin) for name in vars(base)} - set(_METHODS)
_NAMES = {spec.protocol: name for name, spec in POINTS.items()}


def declared_points(cls: type) -> list[str]:
    """The points the plugin class declares (inherits the Protocol of)."""
    return [name for name, spec in POINTS.items() if spec.protocol in cls.__mro__]


def check_plugin_class(cls: type[Plugin]) -> None:
    """Refuse, when the class is registered, a declared point whose method the class does not
    define (the Protocol's stub would answer None) and a public method of no declared point
    (it would never be called). Helpers are private (a leading underscore)."""
    label = cls.name or cls.__name__
    declared = declared_points(cls)
    for name in declared:
        for method in POINTS[name].methods:
            owner = next(k for k in cls.__mro__ if method in vars(k))
            if owner is POINTS[name].protocol:
                raise TypeError(f"plugin {label}: declares {POINTS[name].protocol.__name__} but defines no {method}")
    allowed = {method for name in declared for method in POINTS[name].methods} | _CONTRACT
    for klass in cls.__mro__:
        if klass in (Plugin, AccountingPlugin, object) or any(klass is spec.protocol for spec in POINTS.values()):
            continue
        for attr, value in vars(klass).items():
            if attr.startswith("_") or attr in allowed:
                continue
            if not (callable(value) or isinstance(value, (classmethod, staticmethod))):
                continue
            if attr in _METHODS:
                protocol = POINTS[_METHODS[attr]].protocol.__name__
                raise TypeError(f"plugin {label}: method {klass.__name__}.{attr} is the {protocol} extension point, "
                                f"which the class does not declare; inherit {protocol}")
            close = difflib.get_close_matches(attr, _METHODS, n=1)
            hint = f"did you mean {close[0]}?" if close else f"extension points: {', '.join(_METHODS)}"
            raise TypeError(f"plugin {label}: method {klass.__name__}.{attr} matches no "
                            f"extension point ({hint}); name a helper with a leading underscore")


# (plugin class, option) per tier -> point -> the positions of the plugins answering it: per
# tier, and as (tier, position) pairs in tier order. Which plugins answer depends only on their
# classes and options, so it is worked out once per configuration, not every session; the key
# keeps the options alive, so their ids stay theirs.
_Layout = tuple[dict[str, list[list[int]]], dict[str, list[tuple[int, int]]]]
_LAYOUTS: dict[tuple[tuple[tuple[type, int], ...], ...], tuple[Any, _Layout]] = {}


def _layout(tiers: Sequence[Sequence[Plugin]]) -> _Layout:
    key = tuple(tuple((type(p), id(p.option)) for p in tier) for tier in tiers)
    found = _LAYOUTS.get(key)
    if found is None:
        per_tier = {name: [[i for i, p in enumerate(tier)
                            if spec.protocol in type(p).__mro__ and (spec.flag is None or p.option.enabled(spec.flag))]
                           for tier in tiers]
                    for name, spec in POINTS.items()}
        in_order = {name: [(t, i) for t, positions in enumerate(layout) for i in positions]
                    for name, layout in per_tier.items()}
        found = _LAYOUTS[key] = ([p.option for tier in tiers for p in tier], (per_tier, in_order))
    return found[1]


class Points:
    """Per point, the answering plugins' methods in tier order."""

    def __init__(self, tiers: Sequence[Sequence[Plugin]]):
        layout, in_order = _layout(tiers)

        def tiered(protocol: type[P]) -> list[list[P]]:
            return [[tier[i] for i in positions] for tier, positions in  # type: ignore[misc]
                    zip(tiers, layout[_NAMES[protocol]])]

        def flat(protocol: type[P]) -> list[P]:
            return [tiers[t][i] for t, i in in_order[_NAMES[protocol]]]  # type: ignore[misc]

        self.job_order = [p.job_order for p in flat(ext.JobOrder)]
        self.queue_order = [p.queue_order for p in flat(ext.QueueOrder)]
        self.task_order = [p.task_order for p in flat(ext.TaskOrder)]
        self.victim_queue_order = [p.victim_queue_order for p in flat(ext.VictimQueueOrder)]
        self.job_valid = [p.job_valid for p in flat(ext.JobValid)]
        # every JobValid answer is the job's own (Plugin.valid_by_state): kept while its version holds
        self.job_valid_by_state = all(p.valid_by_state for p in flat(ext.JobValid))  # type: ignore[attr-defined]
        self.job_ready = [p.job_ready for p in flat(ext.JobReady)]
        self.job_pipelined = [[p.job_pipelined for p in tier] for tier in tiered(ext.JobPipelined)]
        self.job_starving = [[p.job_starving for p in tier] for tier in tiered(ext.JobStarving)]
        self.job_enqueueable = [[p.job_enqueueable for p in tier] for tier in tiered(ext.JobEnqueueable)]
        self.job_enqueued = [p.job_enqueued for p in flat(ext.JobEnqueued)]
        self.overused = [p.overused for p in flat(ext.Overused)]
        self.allocatable = [p.allocatable for p in flat(ext.Allocatable)]
        self.preemptive = [p.preemptive for p in flat(ext.Preemptive)]
        preemptable, reclaimable = tiered(ext.Preemptable), tiered(ext.Reclaimable)
        self.preemptable = [[p.preemptable for p in tier] for tier in preemptable]
        self.reclaimable = [[p.reclaimable for p in tier] for tier in reclaimable]
        guards = flat(ext.VictimGuard)
        # a guard holds at the votes its plugin takes part in
        voting = ({id(p) for tier in preemptable for p in tier}, {id(p) for tier in reclaimable for p in tier})
        self.preemptable_guards = [g for g in guards if id(g) in voting[0]]
        self.reclaimable_guards = [g for g in guards if id(g) in voting[1]]
        # the same votes for whole-gang eviction, less those that only keep gangs at minAvailable
        self.gang_preemptable = [[p.preemptable for p in tier if not _keeps_gangs(p)] for tier in preemptable]
        self.gang_reclaimable = [[p.reclaimable for p in tier if not _keeps_gangs(p)] for tier in reclaimable]
        self.gang_preemptable_guards = [g for g in self.preemptable_guards if not _keeps_gangs(g)]
        self.gang_reclaimable_guards = [g for g in self.reclaimable_guards if not _keeps_gangs(g)]
        self.victim_tasks = [[p.victim_tasks for p in tier] for tier in tiered(ext.VictimTasks)]
        self.static_predicate = [p.static_predicate for p in flat(ext.StaticPredicate)]
        self.row_predicate = [p.row_predicate for p in flat(ext.RowPredicate)]
        self.predicate = [p.predicate for p in flat(ext.Predicate)]
        self.node_order = [p.node_order for p in flat(ext.NodeOrder)]
        # every row answer a template view keeps comes from the node index and table (Plugin.rows_by_table)
        viewed: list[Plugin] = [*flat(ext.StaticPredicate), *flat(ext.RowPredicate), *flat(ext.NodeOrder)]  # type: ignore[list-item]
        self.views_by_table = all(p.rows_by_table for p in viewed)
        self.batch_node_order = [p.batch_node_order for p in flat(ext.BatchNodeOrder)]
        # the array forms (see `central.framework.plugin`), index for index; None where one lacks its own
        self.node_order_on = _array_forms(flat(ext.NodeOrder), "node_order_on")
        self.row_predicate_on = _array_forms(flat(ext.RowPredicate), "row_predicate_on")
        self.hypernode_gradients = [p.hypernode_gradients for p in flat(ext.HyperNodeGradients)]
        self.eviction_gradients = [p.eviction_gradients for p in flat(ext.EvictionGradients)]
        self.hypernode_order = [p.hypernode_order for p in flat(ext.HyperNodeOrder)]
        listeners = flat(ext.AllocationEvents)
        self.on_allocate = [p.on_allocate for p in listeners]
        self.on_deallocate = [p.on_deallocate for p in listeners]  # index for index, the same plugins
        # runs of identical pods (see `central.framework.plugin`): None where a plugin cannot take them
        runs = all(p.events_in_runs for p in listeners)  # type: ignore[attr-defined]
        self.on_allocate_run = [p.on_allocate_run for p in listeners] if runs else None  # type: ignore[attr-defined]
        self.on_deallocate_run = [p.on_deallocate_run for p in listeners] if runs else None  # type: ignore[attr-defined]
        self.admits_in_row = [p.admits_in_row for p in flat(ext.Allocatable)]  # type: ignore[attr-defined]
        self.allocations_to_ready = [p.allocations_to_ready for p in flat(ext.JobReady)]  # type: ignore[attr-defined]
        self.on_session_close = flat(ext.SessionClose)
        # the plugins whose answers decide a placement: asked whether a pod may be placed in a batch
        deciding: dict[int, Plugin] = {}
        for protocol in (ext.Predicate, ext.RowPredicate, ext.NodeOrder, ext.BatchNodeOrder):
            deciding.update((id(p), p) for p in flat(protocol))  # type: ignore[misc]
        self.placement_plugins = list(deciding.values())

    if TYPE_CHECKING:  # what the lists hold, for readers and the type checker
        job_order: list[Callable[[JobInfo, JobInfo], int]]
        queue_order: list[Callable[[QueueInfo, QueueInfo], int]]
        task_order: list[Callable[[TaskInfo, TaskInfo], int]]
        victim_queue_order: list[Callable[[QueueInfo, QueueInfo, QueueInfo], int]]
        job_valid: list[Callable[[JobInfo], str | None]]
        job_valid_by_state: bool
        views_by_table: bool
        job_ready: list[Callable[[JobInfo], bool]]
        job_pipelined: list[list[Callable[[JobInfo], int]]]
        job_starving: list[list[Callable[[JobInfo], bool]]]
        job_enqueueable: list[list[Callable[[JobInfo], int]]]
        job_enqueued: list[Callable[[JobInfo], None]]
        overused: list[Callable[[QueueInfo], bool]]
        allocatable: list[Callable[[QueueInfo, TaskInfo], Status]]
        preemptive: list[Callable[[QueueInfo, TaskInfo], Status]]
        preemptable: list[list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo] | None]]]
        reclaimable: list[list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo] | None]]]
        preemptable_guards: list[ext.VictimGuard]
        reclaimable_guards: list[ext.VictimGuard]
        gang_preemptable: list[list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo] | None]]]
        gang_reclaimable: list[list[Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo] | None]]]
        gang_preemptable_guards: list[ext.VictimGuard]
        gang_reclaimable_guards: list[ext.VictimGuard]
        victim_tasks: list[list[Callable[[list[TaskInfo]], list[tuple[TaskInfo, str]]]]]
        static_predicate: list[Callable[[PodTemplate], list[Check]]]
        row_predicate: list[Callable[[TaskInfo, np.ndarray], list[Check]]]
        predicate: list[Callable[[TaskInfo, np.ndarray], list[Check]]]
        node_order: list[Callable[[TaskInfo, np.ndarray], np.ndarray]]
        node_order_on: list[Callable[[TaskInfo, RowState], np.ndarray]] | None
        row_predicate_on: list[Callable[[TaskInfo, RowState], list[Check]]] | None
        batch_node_order: list[Callable[[TaskInfo, np.ndarray], np.ndarray | None]]
        hypernode_gradients: list[Callable[[JobInfo, SubGroup | None, HyperNode | None], list[list[HyperNode]] | None]]
        eviction_gradients: list[Callable[[JobInfo], list[list[HyperNode]] | None]]
        hypernode_order: list[Callable[[JobInfo, list[HyperNode], SubGroup | None], np.ndarray]]
        on_allocate: list[Callable[[TaskInfo], None]]
        on_deallocate: list[Callable[[TaskInfo], None]]
        on_allocate_run: list[Callable[[Sequence[TaskInfo]], None]] | None
        on_deallocate_run: list[Callable[[Sequence[TaskInfo]], None]] | None
        admits_in_row: list[Callable[[QueueInfo, TaskInfo, int], int | None]]
        allocations_to_ready: list[Callable[[JobInfo], int]]
        on_session_close: list[ext.SessionClose]


# --- combination rules (see each point's `combine`) -------------------------------------------


def _array_forms(plugins: Sequence[object], method: str) -> list[Callable[..., Any]] | None:
    """Each plugin's array form `method` (the point's method name + "_on"), in order; None
    when one has only the Plugin default, or a subclass redefined the point's method below
    the class that gave the array form (the form would not answer what the method does)."""
    point_method = method.removesuffix("_on")
    for plugin in plugins:
        mro = type(plugin).__mro__
        form_owner = next((k for k in mro if method in vars(k)), Plugin)
        point_owner = next((k for k in mro if point_method in vars(k)), Plugin)
        if form_owner is Plugin or not issubclass(form_owner, point_owner):
            return None
    return [getattr(p, method) for p in plugins]


def _keeps_gangs(plugin: object) -> bool:
    return bool(getattr(plugin, "keeps_gangs", False))


def first_opinion(fns: Sequence[Callable[..., int]], *args: Any) -> int:
    """First non-zero answer wins; 0 when every plugin abstains."""
    for fn in fns:
        result = fn(*args)
        if result:
            return result
    return 0


def all_true(fns: Sequence[Callable[..., bool]], *args: Any) -> bool:
    return all(fn(*args) for fn in fns)


def any_true(fns: Sequence[Callable[..., bool]], *args: Any) -> bool:
    return any(fn(*args) for fn in fns)


def vote(tiers: Sequence[Sequence[Callable[..., int]]], *args: Any) -> bool:
    """Any Reject fails; the first tier with a Permit passes; all abstaining passes."""
    for tier in tiers:
        permitted = False
        for fn in tier:
            result = fn(*args)
            if result == REJECT:
                return False
            permitted = permitted or result > 0
        if permitted:
            return True
    return True


def first_tier_all(tiers: Sequence[Sequence[Callable[..., bool]]], *args: Any) -> bool:
    """AND within the first tier that has any plugin; False when none has (JobStarving)."""
    for tier in tiers:
        if tier:
            return all(fn(*args) for fn in tier)
    return False


def first_answer(fns: Sequence[Callable[..., V | None]], *args: Any) -> V | None:
    for fn in fns:
        result = fn(*args)
        if result is not None:
            return result
    return None


def first_refusal(fns: Sequence[Callable[..., Status]], *args: Any) -> Status:
    for fn in fns:
        status = fn(*args)
        if not status.ok:
            return status
    return ALLOWED


def notify(fns: Sequence[Callable[..., None]], *args: Any) -> None:
    for fn in fns:
        fn(*args)


def victims(tiers: Sequence[Sequence[Callable[[Any, list[V]], list[V] | None]]], actor: Any,
            candidates: list[V]) -> list[V]:
    """Per tier: abstainers (None) are skipped, an empty answer ends the tier (the next
    tier is tried), the rest intersect; the first tier with victims decides."""
    for tier in tiers:
        chosen: list[V] | None = None
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


def union_first_tier(tiers: Sequence[Sequence[Callable[..., list[tuple[V, str]]]]], *args: Any) -> list[tuple[V, str]]:
    """(item, reason) pairs from every plugin of the first tier that yields any; an item
    named twice keeps the first reason (Volcano's VictimTasks)."""
    for tier in tiers:
        chosen: dict[int, tuple[V, str]] = {}
        for fn in tier:
            for item, reason in fn(*args):
                chosen.setdefault(id(item), (item, reason))
        if chosen:
            return list(chosen.values())
    return []
