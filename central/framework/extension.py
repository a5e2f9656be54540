"""The extension points: one Protocol per point, with the flag that gates it and how the
answers of the plugins taking part combine (as Volcano combines them).

A plugin takes part in a point by inheriting its Protocol and defining its method(s):

    class Gang(Plugin, JobValid, JobReady):
        def job_valid(self, job: JobInfo) -> str | None: ...
        def job_ready(self, job: JobInfo) -> bool: ...

so a type checker holds the method to the point's signature, and registration
(`central.framework.points.check_plugin_class`) refuses a declared point left undefined
and a public method that belongs to no declared point. Within a session a plugin answers
a point when it declares it and its configured flag is on (`flag` None: always);
`central.framework.points.Points` keeps, per point, the answering plugins' methods in tier
order, and the session combines their answers by the point's `combine` rule.

Result shapes: orderings answer -1 (left first), 0 (no opinion) or 1; votes answer PERMIT
1, ABSTAIN 0 or REJECT -1; gates answer a `Status`; filters answer `Check`s over the
node rows they were given (`central.framework.status`); scores answer a float per row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from central.framework.status import Check, Status
    from central.model.objects import JobInfo, PodTemplate, QueueInfo, TaskInfo
    from central.model.subgroups import SubGroup
    from central.model.topology import HyperNode

PERMIT, ABSTAIN, REJECT = 1, 0, -1


@dataclass(frozen=True)
class Point:
    protocol: type
    methods: tuple[str, ...]  # the methods a plugin declaring the point defines
    flag: str | None  # the plugin option that turns its answers off (None: always on)
    combine: str  # how the answers of several plugins make one


POINTS: dict[str, Point] = {}  # by the point's (first) method name, in this module's order
T = TypeVar("T", bound=type)


def point(flag: str | None, combine: str) -> Callable[[T], T]:
    def register(protocol: T) -> T:
        methods = tuple(name for name in vars(protocol) if not name.startswith("_"))
        POINTS[methods[0]] = Point(protocol, methods, flag, combine)
        return protocol
    return register


FIRST_OPINION = "the first non-zero answer, in tier order, decides; the session's fallback when none"
VOTE = "any REJECT fails; else the first tier with a PERMIT passes; all abstaining passes"
ALL = "AND over every plugin (none: True)"
FIRST_REFUSAL = "the first refusing Status, in tier order (none: ALLOWED)"
SUM = "summed over every plugin"
VICTIMS = ("per tier: abstainers (None) are skipped, an empty answer ends the tier, the rest "
           "intersect; the first tier left with victims decides (none: no victims)")

# --- orderings (the session's heaps and lines) -------------------------------------------------


@point("enableJobOrder", FIRST_OPINION + " (creation time, then uid)")
class JobOrder(Protocol):
    def job_order(self, left: JobInfo, right: JobInfo) -> int: ...


@point("enableQueueOrder", FIRST_OPINION + " (creation time, then name)")
class QueueOrder(Protocol):
    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int: ...


@point("enableTaskOrder", FIRST_OPINION + " (pod index, creation time, then uid)")
class TaskOrder(Protocol):
    """May read only the two tasks and their jobs' fixed settings: a job's pending tasks are
    sorted once per allocate (`central.framework.ordering.FixedLine`)."""

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int: ...


@point(None, FIRST_OPINION + " (the inverse of queue order)")
class VictimQueueOrder(Protocol):
    """Which victim queue gives up resources first, for a preemptor of `preemptor_queue`."""

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor_queue: QueueInfo) -> int: ...


# --- jobs ----------------------------------------------------------------------------------------


@point(None, "the first reason given, in tier order (none: valid)")
class JobValid(Protocol):
    """A reason the job cannot be scheduled at all this session, or None."""

    def job_valid(self, job: JobInfo) -> str | None: ...


@point("enableJobReady", ALL)
class JobReady(Protocol):
    def job_ready(self, job: JobInfo) -> bool: ...


@point("enableJobPipelined", VOTE)
class JobPipelined(Protocol):
    def job_pipelined(self, job: JobInfo) -> int: ...


@point("enableJobStarving", "AND within the first tier that has any plugin (none: False)")
class JobStarving(Protocol):
    def job_starving(self, job: JobInfo) -> bool: ...


@point("enableJobEnqueued", VOTE)
class JobEnqueueable(Protocol):
    """May the Pending job be admitted? A refusing plugin says why with `handle.note_job`."""

    def job_enqueueable(self, job: JobInfo) -> int: ...


@point("enableJobEnqueued", "every plugin is told")
class JobEnqueued(Protocol):
    def job_enqueued(self, job: JobInfo) -> None: ...


# --- queues and gates ----------------------------------------------------------------------------


@point("enabledOverused", "OR over every plugin (none: False)")
class Overused(Protocol):
    def overused(self, queue: QueueInfo) -> bool: ...


@point("enabledAllocatable", FIRST_REFUSAL)
class Allocatable(Protocol):
    """May the queue take the task now (its allocation plus the request)?"""

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Status: ...


@point("enablePreemptive", FIRST_REFUSAL)
class Preemptive(Protocol):
    """May the queue reclaim for the task?"""

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> Status: ...


# --- victims -------------------------------------------------------------------------------------


@point("enablePreemptable", VICTIMS)
class Preemptable(Protocol):
    """Which of the candidates (offered least important first) the preemptor may evict;
    None abstains."""

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None: ...


@point("enableReclaimable", VICTIMS)
class Reclaimable(Protocol):
    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None: ...


@point(None, "applied in turn, after the Preemptable or Reclaimable tiers voted; a plugin guards "
             "only the votes it takes part in (that point declared and its flag on)")
class VictimGuard(Protocol):
    """A veto that holds whatever later tiers decide: `guard_victims` keeps, of the victims
    the tiers chose (least important first), those that may go; `may_lose` says cheaply,
    before any vote, whether one candidate could be among them (a bound on the room that
    evicting could make)."""

    def guard_victims(self, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]: ...

    def may_lose(self, preemptor: TaskInfo, victim: TaskInfo) -> bool: ...


@point("enabledVictim", "the union within the first tier that names any (a task named twice keeps "
                        "the first reason)")
class VictimTasks(Protocol):
    """Running tasks to evict now, with the reason (the shuffle action)."""

    def victim_tasks(self, running: list[TaskInfo]) -> list[tuple[TaskInfo, str]]: ...


# --- placement, over node rows (numpy int arrays of candidate rows) ---------------------------


@point("enablePredicate", "every check must pass; per node the worst code counts")
class StaticPredicate(Protocol):
    """Filters that depend only on the pod template and the nodes (selectors, taints): checks
    over all rows, computed once per template per session."""

    def static_predicate(self, template: PodTemplate) -> list[Check]: ...


@point("enablePredicate", "every check must pass; per node the worst code counts")
class RowPredicate(Protocol):
    """Filters where a row's answer depends only on that node's state and the pod's template
    (usage thresholds): cached per template, re-checked on the rows that changed."""

    def row_predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]: ...


@point("enablePredicate", "every check must pass; the first failing reason is reported")
class Predicate(Protocol):
    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]: ...


@point("enableNodeOrder", SUM)
class NodeOrder(Protocol):
    """A row's score may depend only on that node's state and the pod's template: cached per
    template, re-scored on the rows that changed (Volcano's NodeOrderFn)."""

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray: ...


@point("enableNodeOrder", SUM + "; None adds nothing")
class BatchNodeOrder(Protocol):
    """Scores that depend on the candidate set (normalised ones)."""

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None: ...


# --- network topology (jobs with spec.networkTopology; see central.actions.hypernodes) --------


@point("enabledHyperNodeGradient", "the first plugin that answers decides (none: no search)")
class HyperNodeGradients(Protocol):
    """The HyperNodes the gang may land in, lowest tier first; for one of its sub-groups
    (`group`) when given, inside `within` (the job's HyperNode) when given."""

    def hypernode_gradients(self, job: JobInfo, group: SubGroup | None = None,
                            within: HyperNode | None = None) -> list[list[HyperNode]] | None: ...


@point("enabledHyperNodeOrder", SUM)
class HyperNodeOrder(Protocol):
    """Scores of the HyperNodes the gang (or its sub-group `group`) fits."""

    def hypernode_order(self, job: JobInfo, hypernodes: list[HyperNode], group: SubGroup | None = None) -> np.ndarray: ...


# --- events --------------------------------------------------------------------------------------


@point(None, "every plugin is told, in tier order (undone in reverse)")
class AllocationEvents(Protocol):
    """Fired by every statement operation and its undo: an allocation or pipeline is
    `on_allocate`, an eviction `on_deallocate`, and a discard tells the opposite. Raising
    InputError refuses the operation (the plugins already told hear the undo)."""

    def on_allocate(self, task: TaskInfo) -> None: ...

    def on_deallocate(self, task: TaskInfo) -> None: ...


@point(None, "every plugin is told, in tier order")
class SessionClose(Protocol):
    def on_session_close(self) -> None: ...
