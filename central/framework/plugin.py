"""The plugin contract.

A plugin is a class with a `name`, built once per session from its `PluginOption` (whose
`settings` its class method `read_arguments` made of the configured arguments at load) and
the session's `Handle` (`central.framework.handle`: what it may read, and the calls through
which it records notes, conditions, annotations and faults). It takes part in an extension
point by defining the method of that name; the session finds those methods at open, keeps
the ones whose `enable*` flag is on, and combines their answers the way Volcano does (see
`central.framework.points`). A public method that is no extension point is refused when the
plugin is registered: helpers are private. Every extension point is optional:

Orderings, each returning -1 (left first), 0 (no opinion) or 1:
    job_order(l, r), queue_order(l, r), task_order(l, r),
        (task_order may read only the two tasks and their jobs' fixed settings: a job's
        pending tasks are sorted once per allocate, `central.framework.ordering.FixedLine`)
    victim_queue_order(l, r, preemptor_queue)   which victim queue gives up resources first
Votes and checks:
    job_valid(job) -> str | None            a reason the job cannot be scheduled at all
    job_ready(job) -> bool                  AND
    job_pipelined(job) -> int               Permit 1 / Abstain 0 / Reject -1
    job_starving(job) -> bool               AND within the first tier that answers
    job_enqueueable(job) -> int             Permit / Abstain / Reject
    job_enqueued(job) -> None               every plugin is told
    overused(queue) -> bool                 OR
    allocatable(queue, task) -> bool        AND
    preemptive(queue, task) -> bool         AND
    preemptable(preemptor, victims) -> list | None   per-tier intersection (None abstains)
    reclaimable(reclaimer, victims) -> list | None
    can_give_up(victim) -> bool             AND, always on: may the victim's queue lose it to
                                            reclaim now (above its deserved share)? Checked
                                            before each eviction, whatever the tiers voted
    victim_tasks(running) -> list[(task, reason)]   Running tasks to evict now, and why (the
                                            shuffle action); gated by `enabledVictim`; union
                                            within the first tier that yields any
Placement, vectorised over node rows (numpy int arrays of candidate rows):
    static_predicate(template) -> list[(ok_mask, reason)]  filters that depend only on the pod
                                                       template and the nodes (selectors, taints):
                                                       masks over all rows, computed once per
                                                       template per session
    row_predicate(task, rows) -> list[(ok_mask, reason)]  filters where a row's answer depends only
                                                       on that node's state and the pod's template
                                                       (usage thresholds): cached like node_order
    predicate(task, rows) -> list[(ok_mask, reason)]   all must pass; first failing reason is reported
    node_order(task, rows) -> float array              a row's score may depend only on that node's
                                                       state and the pod's template: the session
                                                       caches it per template and re-scores only
                                                       the rows that changed (Volcano's NodeOrderFn)
    batch_node_order(task, rows) -> float array | None scores that depend on the candidate set
                                                       (normalised ones); None adds nothing
    Both are summed over plugins and tiers.
    batchable(task) -> bool                            may the session place the task and its
                                                       template's twins in one batch
                                                       (`central.framework.placement`)? Say True
                                                       only if, while pods of that template are
                                                       placed, this plugin's row_predicate and
                                                       node_order answers for a row read that
                                                       node's state only from the node table
                                                       (`central.model.nodetable`), its predicate
                                                       answers do not change, and its
                                                       batch_node_order answers None. Default False;
                                                       asked of the plugins taking part in those
                                                       points only.
Network topology (jobs with spec.networkTopology; see central.actions.hypernodes):
    hypernode_gradients(job) -> list[list[HyperNode]] | None   the HyperNodes the gang may land
                                                       in, lowest tier first; the first plugin
                                                       that answers decides (None: no search)
    hypernode_order(job, hypernodes) -> float array    scores of HyperNodes the gang fits, summed
Events and lifecycle:
    on_allocate(task), on_deallocate(task)   fired by every statement operation and its undo
    on_session_close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from central.errors import InputError, shown

MAX_NUMBER = 1e9  # plugin weights and factors; more is a typo (or an overflow waiting)

if TYPE_CHECKING:
    from central.framework.conf import PluginOption
    from central.framework.handle import Handle
    from central.model.objects import TaskInfo

PERMIT, ABSTAIN, REJECT = 1, 0, -1


class Arguments:
    """One plugin's configured `arguments`, read with a type each by the plugin's
    `read_arguments`; a key it never reads is a typo, refused by `check_all_read`."""

    def __init__(self, plugin: str, raw: Mapping[str, Any]):
        self.plugin = plugin
        self.raw = raw
        self._read: set[str] = set()

    def error(self, key: str, message: str) -> InputError:
        return InputError(f"plugin {self.plugin}: arguments.{key}", message)

    def accept(self, *keys: str) -> None:
        """Names the plugin takes and ignores (Volcano's, for compatibility)."""
        self._read.update(keys)

    def get(self, key: str, default: Any, kind: type = float) -> Any:
        """A typed argument (`kind=object`: as written); InputError names the plugin and key."""
        self._read.add(key)
        value = self.raw.get(key, default)
        if kind is bool:
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            if not isinstance(value, bool):
                raise self.error(key, f"expected true or false, got {shown(value)}")
            return value
        if kind in (int, float):
            try:
                if isinstance(value, bool) or not abs(float(value)) <= MAX_NUMBER:  # also refuses NaN
                    raise ValueError
                return kind(value)
            except (TypeError, ValueError, OverflowError):
                raise self.error(key, f"expected a number within ±{MAX_NUMBER:.0e}, got {shown(value)}") from None
        if not isinstance(value, kind):
            raise self.error(key, f"expected {kind.__name__}, got {shown(value)}")
        return value

    def check_all_read(self) -> None:
        unknown = sorted(set(self.raw) - self._read)
        if unknown:
            raise self.error(unknown[0], f"unknown argument; valid: {', '.join(sorted(self._read)) or 'none (it takes no arguments)'}")


class Plugin:
    name = ""

    def __init__(self, option: "PluginOption", session: "Handle"):
        self.option = option
        self.settings = option.settings  # what `read_arguments` made of the arguments, at load
        self.session = session  # the plugin's narrow view of its session

    def batchable(self, task: "TaskInfo") -> bool:
        """See the module's docstring (batch placement)."""
        return False

    @classmethod
    def read_arguments(cls, args: Arguments) -> Any:
        """Read and check the configured arguments, once, when the configuration loads (so a
        bad one is refused there and a hot reload keeps the last good configuration); what
        it returns is `self.settings` in every session. Read every key the plugin takes:
        the others are refused as typos."""
        return None


class AccountingPlugin(Plugin):
    """A plugin that keeps its own tally of what is allocated (drf, proportion, capacity):
    every statement operation and its undo reach `charge` with +1 or -1."""

    def on_allocate(self, task: "TaskInfo") -> None:
        self.charge(task, +1)

    def on_deallocate(self, task: "TaskInfo") -> None:
        self.charge(task, -1)

    def charge(self, task: "TaskInfo", sign: int) -> None:
        raise NotImplementedError

    def deserved_shares(self) -> dict[str, Any] | None:
        """Queue -> the resource vector it deserves this session, where the plugin computes
        shares (proportion, capacity); reports show it. None: no shares here (drf)."""
        return None
