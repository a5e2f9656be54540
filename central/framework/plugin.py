"""The plugin contract.

A plugin is a class with a `name`, built once per session from its `PluginOption` (whose
`settings` its class method `read_arguments` made of the configured arguments at load) and
the session's `Handle` (`central.framework.handle`: what it may read, and the calls through
which it records notes, conditions, annotations and faults), kept as `self.handle`. It takes
part in extension points by inheriting their Protocols (`central.framework.extension`,
where each point's signature, flag and combination rule are) and defining their methods;
a public method that belongs to no declared point is refused when the plugin is registered
(`central.framework.points.check_plugin_class`): helpers are private.

Besides the points, a plugin class may say, for the framework and tools around it:
- `batchable(task)`: may the session place the task and its template's twins in one batch
  (`central.framework.placement`)? Say True only if, while pods of that template are placed,
  this plugin's row_predicate and node_order answers for a row read that node's state only
  from the node table (`central.model.nodetable`), its predicate answers do not change, and
  its batch_node_order answers None. Asked of the plugins taking part in placement points.
- `divides_queues`: how it shares the cluster among queues, "flat" or "hierarchical" (the
  latter when its enableHierarchy flag is on); the two cannot share a tier.
- `time_sensitive`: its answers change with the clock alone (windows, deadlines), so a
  simulation re-runs cycles while pods wait or run even when nothing else changed.
- `keeps_gangs`: its Preemptable/Reclaimable votes and victim guard only keep jobs at their
  minAvailable (gang's). The whole-gang actions (gangpreempt, gangreclaim) keep gangs whole
  themselves and leave such votes out; every other vote counts there as in preempt/reclaim.
- `calls_out`: it answers by calling another service (an HTTP scheduler extender). Sessions
  of a forward run (the start-time estimates) leave it out: they must not reach the service
  with a cluster that exists only in the run.
- `valid_by_state`: its JobValid answer depends on the job alone (its PodGroup and the
  statuses of its tasks: what `JobInfo.version` follows), not on the session or the clock;
  while every JobValid plugin of a configuration says so, a job's answer is kept across
  sessions until its version changes (gang's).
- `rows_by_table`: its static_predicate, row_predicate and node_order answers read of a
  template only its request, node selector, node affinity and tolerations, of the nodes only
  the node index (names, labels, taints, cordons) and the node table, and otherwise only the
  configuration. While every plugin answering those points says so, templates alike in those
  share one view (the pods of different jobs with the same shape), and views are kept from
  one session to the next, where only the rows written since are worked out again
  (`central.framework.placement`).
- `closes_by_state`: its on_session_close sets PodGroup conditions (`set_condition`) only
  from the job's state and what the session noted of it (side conditions, notes and events
  are free: closing sees them). While every SessionClose plugin of a session says so, a
  job nothing changed keeps its last close and the plugins are asked only for the others
  (`Handle.closing_jobs`, `central.framework.closing`); otherwise every job is worked out.

Runs of identical pods (the pods of one template a batch placement put, allocated one after
the other with nothing asked in between) can be allocated at once where every plugin taking
part says how (defaults keep a plugin pod by pod):
- `events_in_runs`: its on_allocate/on_deallocate read only the task and the plugin's own
  state, so a run is told with `on_allocate_run` once the whole run is on the table
  (AccountingPlugin's are, through `charge_run`).
- `admits_in_row(queue, task, count)` (Allocatable plugins): how many of `count` pods of the
  task's template in a row it admits, each charged before the next is asked; None: it
  cannot say.
- `allocations_to_ready(job)` (JobReady plugins): the fewest more allocated pods before its
  job_ready can answer True.

Array forms of the row-local placement points (defaults: none). `node_order_on(task, state)`
and `row_predicate_on(task, state)` answer what node_order and row_predicate answer, for the
rows of a `central.framework.rowstate.RowState`, reading the node table only through it (its
`rows` may index what the plugin keeps per node, such as static scores). A plugin whose
node_order is `node_order_on` over the table's rows gives the same figures both ways. Where
every plugin answering those points has them, the placement shares one gathering of the
table's rows between them and its own checks, and works out a batch's rows with j more pods
for several j in one call (`central.framework.placement`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from central.errors import InputError, shown
from central.framework.extension import ABSTAIN, PERMIT, REJECT, AllocationEvents
from central.model.fields import GO_BOOLS
from central.resources.vectors import add_repeated

MAX_NUMBER = 1e9  # plugin weights and factors; more is a typo (or an overflow waiting)

if TYPE_CHECKING:
    import numpy as np

    from central.framework.handle import Handle
    from central.framework.rowstate import RowState
    from central.framework.status import Check
    from central.model.objects import JobInfo, QueueInfo, TaskInfo

__all__ = ["ABSTAIN", "PERMIT", "REJECT", "AccountingPlugin", "Arguments", "Plugin", "PluginOption"]

OFF_BY_DEFAULT = frozenset({"enableHierarchy", "enabledClusterOrder"})  # the flags unset means off


@dataclass(frozen=True)
class PluginOption:
    name: str
    flags: Mapping[str, bool]
    arguments: Mapping[str, Any]
    settings: Any = None  # what the plugin class's `read_arguments` made of `arguments`

    def enabled(self, flag: str) -> bool:
        return self.flags.get(flag, flag not in OFF_BY_DEFAULT)


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
        if kind is bool:  # a bool, or a string Go's strconv.ParseBool reads, as Volcano's GetBool
            if isinstance(value, str) and value in GO_BOOLS:
                return GO_BOOLS[value]
            if not isinstance(value, bool):
                raise self.error(key, f"expected true or false, got {shown(value)}")
            return value
        if kind in (int, float):
            try:
                if isinstance(value, bool) or not abs(float(value)) <= MAX_NUMBER:  # also refuses NaN
                    raise ValueError
                if kind is int and float(value) != int(float(value)):  # 2.5 is no int (GetInt ignores it)
                    raise ValueError
                return kind(float(value)) if kind is int else kind(value)
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
    name: ClassVar[str] = ""
    divides_queues: ClassVar[Literal["flat", "hierarchical"] | None] = None
    time_sensitive: ClassVar[bool] = False
    keeps_gangs: ClassVar[bool] = False
    calls_out: ClassVar[bool] = False
    valid_by_state: ClassVar[bool] = False
    closes_by_state: ClassVar[bool] = False
    rows_by_table: ClassVar[bool] = False
    events_in_runs: ClassVar[bool] = False

    def __init__(self, option: PluginOption, handle: Handle):
        self.option = option
        self.settings = option.settings  # what `read_arguments` made of the arguments, at load
        self.handle = handle  # the plugin's narrow view of its session

    def batchable(self, task: TaskInfo) -> bool:
        """See the module's docstring (batch placement)."""
        return False

    def admits_in_row(self, queue: QueueInfo, task: TaskInfo, count: int) -> int | None:
        """See the module's docstring (runs of identical pods)."""
        return None

    def allocations_to_ready(self, job: JobInfo) -> int:
        """See the module's docstring (runs of identical pods)."""
        return 1

    def node_order_on(self, task: TaskInfo, state: RowState) -> np.ndarray:
        """See the module's docstring (array forms)."""
        raise NotImplementedError(f"plugin {self.name}: node_order has no array form")

    def row_predicate_on(self, task: TaskInfo, state: RowState) -> list[Check]:
        """See the module's docstring (array forms)."""
        raise NotImplementedError(f"plugin {self.name}: row_predicate has no array form")

    def on_allocate_run(self, tasks: Sequence[TaskInfo]) -> None:
        """`on_allocate` for each task of a run in order (a plugin with `events_in_runs`), all
        or none: an InputError is raised once the tasks already told are undone."""
        events = cast(AllocationEvents, self)
        told = 0
        try:
            for task in tasks:
                events.on_allocate(task)
                told += 1
        except InputError:
            for task in reversed(tasks[:told]):
                events.on_deallocate(task)
            raise

    def on_deallocate_run(self, tasks: Sequence[TaskInfo]) -> None:
        """The undo of `on_allocate_run`: `on_deallocate` for each task, last first."""
        events = cast(AllocationEvents, self)
        for task in reversed(tasks):
            events.on_deallocate(task)

    @classmethod
    def read_arguments(cls, args: Arguments) -> Any:
        """Read and check the configured arguments, once, when the configuration loads (so a
        bad one is refused there and a hot reload keeps the last good configuration); what
        it returns is `self.settings` in every session. Read every key the plugin takes:
        the others are refused as typos."""
        return None


class AccountingPlugin(Plugin, AllocationEvents):
    """A plugin that keeps its own tally of what is allocated (drf, proportion, capacity):
    every statement operation and its undo reach `charge` with +1 or -1, a run of them
    `charge_run` (by default `charge` task by task)."""

    events_in_runs = True

    def on_allocate(self, task: TaskInfo) -> None:
        self.charge(task, +1)

    def on_deallocate(self, task: TaskInfo) -> None:
        self.charge(task, -1)

    def on_allocate_run(self, tasks: Sequence[TaskInfo]) -> None:
        self.charge_run(tasks, +1)

    def on_deallocate_run(self, tasks: Sequence[TaskInfo]) -> None:
        self.charge_run(tasks, -1)

    def charge(self, task: TaskInfo, sign: int) -> None:
        raise NotImplementedError

    def charge_run(self, tasks: Sequence[TaskInfo], sign: int) -> None:
        """`charge` for each task of a run, all or none (as `Plugin.on_allocate_run`)."""
        if sign > 0:
            Plugin.on_allocate_run(self, tasks)
        else:
            Plugin.on_deallocate_run(self, tasks)

    def deserved_shares(self) -> dict[str, Any] | None:
        """Queue -> the resource vector it deserves this session, where the plugin computes
        shares (proportion, capacity); reports show it. None: no shares here (drf)."""
        return None


def charge_repeated(vec: Any, tasks: Sequence[TaskInfo], sign: int) -> bool:
    """Add `sign` x the request of each task of a run to `vec` in place, where the run is of
    one template (one request vector): True; False where it is not (nothing added)."""
    req = tasks[0].resreq
    if req is None or any(task.resreq is not req for task in tasks):
        return False
    add_repeated(vec, req, len(tasks), sign)
    return True
