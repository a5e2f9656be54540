"""The scheduling model: tasks (pods), jobs (PodGroups), nodes and queues.

Hot objects are slotted dataclasses. Everything a pod's placement depends on besides its
identity (requests, selectors, affinity, tolerations, ports, spread constraints, labels) lives
in a shared, immutable `PodTemplate`: the pods of one Volcano task share one template, so
filters and static scores are computed once per template, not once per pod.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

import numpy as np

from central.model.schedulinggate import only_queue_gate

# Job versions (`JobInfo.version`): one counter for every job of every cache, so that a version
# taken as a mark (`ClusterCache.version_mark`) orders against every job's last change.
next_version = itertools.count(1).__next__


class TaskStatus(enum.IntEnum):
    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9
    UNKNOWN = 10


ALLOCATED_STATUSES = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
TERMINATED_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
# Placed but not running yet: what a node's measured usage cannot show.
STARTING_STATUSES = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND})


def task_status(phase: str, node_name: str | None, deleting: bool) -> TaskStatus:
    """Volcano's mapping of a pod's phase, node and deletion mark to a task status."""
    if phase in ("Running", "Pending") and deleting:
        return TaskStatus.RELEASING
    if phase == "Running":
        return TaskStatus.RUNNING
    if phase == "Pending":
        return TaskStatus.BOUND if node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str | None
    operator: str  # Equal | Exists
    value: str | None
    effect: str | None  # None tolerates every effect

    def tolerates(self, taint: "Taint") -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key is None:  # empty key with Exists matches every taint
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or (self.value or "") == (taint.value or "")


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str | None
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One matchExpressions entry (operators In, NotIn, Exists, DoesNotExist, Gt, Lt)."""

    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        op = self.operator
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            left, right = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right


@dataclass(frozen=True, slots=True)
class NodeGroupAffinity:
    """A Queue's spec.affinity: node groups (label volcano.sh/nodegroup-name) its pods must,
    may or must not use; preferred lists keep their order (enablePreferredOrder scores it)."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    """A PodGroup's spec.networkTopology (parsed in `hypernodes`, with the HyperNodes it is
    resolved against)."""

    mode: str  # hard | soft
    highest_tier: int | None  # highestTierAllowed
    highest_tier_name: str = ""  # highestTierName: resolved against the HyperNodes' tierName

    @property
    def hard(self) -> bool:
        return self.mode == "hard"


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """One of a PodGroup's spec.subGroupPolicy (parsed and applied in `central.model.subgroups`)."""

    name: str
    size: int  # subGroupSize: the pods a sub-group needs placed together (1 when unset)
    min_groups: int  # minSubGroups: sub-groups the job needs ready (0: no bound of its own)
    selector: Selector | None
    match_keys: tuple[str, ...]
    network_topology: NetworkTopology | None


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector (matchLabels folded into In requirements). Empty matches everything."""

    requirements: tuple[LabelRequirement, ...]

    def matches(self, labels: dict[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: Selector
    topology_key: str
    namespaces: tuple[str, ...]  # empty: the pod's own namespace
    weight: int = 0  # preferred terms only

    def selects(self, namespace: str, labels: dict[str, str], own_namespace: str) -> bool:
        allowed = self.namespaces or (own_namespace,)
        return namespace in allowed and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: Selector


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """What a pod's placement depends on. Shared by identical pods (one Volcano task)."""

    namespace: str
    resreq: tuple[tuple[str, float], ...]  # the effective request (init containers too): charged and fitted
    labels: tuple[tuple[str, str], ...]
    node_selector: tuple[tuple[str, str], ...]
    required_node_terms: tuple[Selector, ...]  # ORed nodeSelectorTerms
    preferred_node_terms: tuple[tuple[int, Selector], ...]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[tuple[str, int, str], ...]  # (protocol, port, hostIP)
    pod_affinity: tuple[PodAffinityTerm, ...]
    pod_anti_affinity: tuple[PodAffinityTerm, ...]
    preferred_pod_affinity: tuple[PodAffinityTerm, ...]
    preferred_pod_anti_affinity: tuple[PodAffinityTerm, ...]
    spread: tuple[SpreadConstraint, ...]
    guaranteed: bool = False  # Guaranteed QoS: every container's cpu and memory requests equal its limits
    _hash: int = field(default=0, compare=False, repr=False)  # computed once: templates key many dicts

    def __hash__(self) -> int:
        if not self._hash:
            object.__setattr__(self, "_hash", hash(tuple(getattr(self, f) for f in _TEMPLATE_FIELDS)) or 1)
        return self._hash

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def has_inter_pod_terms(self) -> bool:
        return bool(self.pod_affinity or self.pod_anti_affinity or self.spread
                    or self.preferred_pod_affinity or self.preferred_pod_anti_affinity)


_TEMPLATE_FIELDS = tuple(f.name for f in fields(PodTemplate) if f.compare)


@dataclass(slots=True, eq=False)
class TaskInfo:
    uid: str  # "<namespace>/<name>"
    name: str
    namespace: str
    job_uid: str
    role: str  # the Volcano task name (annotation volcano.sh/task-spec, else the label), or "" for a plain pod
    index: int  # pod index within its task, for task order
    template: PodTemplate
    priority: int
    preemptable: bool
    preempt_never: bool  # preemptionPolicy: Never
    scheduler_name: str
    creation: str
    status: TaskStatus
    node: str | None
    nominated_node: str | None = None
    critical: bool = False  # system-cluster-critical / system-node-critical
    annotations: dict[str, str] = field(default_factory=dict)
    spec_priority: int | None = None  # spec.priority as given; else priority_class decides
    priority_class: str = ""
    resreq: np.ndarray | None = None  # dense vector, set by the cache over its dimensions
    claims: tuple[str, ...] = ()  # names of the PersistentVolumeClaims its volumes use (its namespace)
    # spec.resourceClaims as (entry name, ResourceClaim name or "" while its template's claim is not created)
    device_claims: tuple[tuple[str, str], ...] = ()
    scheduled_at: str = ""  # lastTransitionTime of the pod's PodScheduled=True condition ("" without)
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates' names: the API server binds none while any remain

    @property
    def best_effort(self) -> bool:
        return not any(v > 0.1 for _, v in self.template.resreq)

    @property
    def gated(self) -> bool:
        return bool(self.scheduling_gates)

    @property
    def externally_gated(self) -> bool:
        """Held by a gate other than the queue-allocation gate alone: no action considers it."""
        return bool(self.scheduling_gates) and not only_queue_gate(self.scheduling_gates)


@dataclass(slots=True, eq=False)
class JobInfo:
    """A PodGroup and its tasks."""

    uid: str  # "<namespace>/<podgroup>"
    name: str
    namespace: str
    queue: str
    priority: int
    min_available: int
    task_min_available: dict[str, int]
    min_resources: dict[str, float] | None
    phase: str  # PodGroup status.phase; "" is Pending
    creation: str
    preemptable: bool = False
    priority_class: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    # the PodGroup's status as last read or written, in `central.model.pgstatus.semantic` form (None: unknown)
    reported: tuple[Any, ...] | None = None
    implicit: bool = False  # made for a plain pod without a PodGroup
    has_podgroup: bool = True  # False while pods name a PodGroup the cache has not seen
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    counts: dict[TaskStatus, int] = field(default_factory=dict)
    role_counts: dict[tuple[str, TaskStatus], int] = field(default_factory=dict)
    ready: int = 0  # tasks in READY_STATUSES, kept by the cache with `counts` (orderings ask often)
    role_ready: dict[str, int] = field(default_factory=dict)  # role -> its tasks in READY_STATUSES
    best_effort_pending: dict[str, int] = field(default_factory=dict)  # role -> pending tasks without requests
    allocated: np.ndarray | None = None  # sum of resreq over allocated tasks
    pending_request: np.ndarray | None = None  # sum of resreq over pending tasks
    min_request: np.ndarray | None = None  # min_resources as a dense vector (zeros without), set by the cache
    fit_errors: dict[str, "FitErrors | str"] = field(default_factory=dict)  # task uid -> why not placed
    network_topology: NetworkTopology | None = None  # spec.networkTopology
    # what the last session close computed of it, reused while nothing it depends on changed
    # (`central.framework.closing.Closed`)
    closed: Any = None
    # bumped (from one counter for all jobs) by the cache at every change of its tasks: one
    # added, removed, replaced or moved to another status or node (a changed PodGroup is a new
    # JobInfo): what is kept of a job across sessions holds while the job has that version
    version: int = 0
    # (version, configuration, answer): its JobValid answer where every plugin's depends on the
    # job alone (`central.framework.session.Session.job_valid`)
    valid: tuple[int, Any, str | None] | None = None
    # the version at which a session's close found it at rest: nothing for an action to do (no
    # pending, pipelined or releasing pod, admitted, valid) and its status settled. While the
    # version holds, a session under the same configuration passes it by
    # (`central.framework.session.Session.restless`)
    rest: int = -1
    sub_group_policies: tuple[SubGroupPolicy, ...] = ()  # spec.subGroupPolicy
    # spec.minResources with every name kept (`pods`, `requests.cpu`...), what a ResourceQuota reads
    quota_request: dict[str, Decimal] | None = None

    def count(self, *statuses: TaskStatus) -> int:
        get, n = self.counts.get, 0
        for status in statuses:
            n += get(status, 0)
        return n

    @property
    def ready_num(self) -> int:
        return self.ready

    @property
    def task_min_total(self) -> int:
        """The sum of the roles' minTaskMember."""
        return sum(self.task_min_available.values()) if self.task_min_available else 0

    @property
    def pending_phase(self) -> bool:
        return self.phase in ("", "Pending")


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    index: int  # row in the node table
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: dict[str, float]
    max_pods: int
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # tasks charged to this node
    annotations: dict[str, str] = field(default_factory=dict)
    capacity: dict[str, float] = field(default_factory=dict)  # status.capacity: what agent reports are held to


# A Queue's status has one writer per field, each writing its fields alone (a merge patch on
# /status): the Queue controller its state and PodGroup counts, the scheduler the rest
# (allocated...). Whole-status PUTs from both made 143 conflicts in 4 minutes under load, and
# one could write back the other's stale value (Volcano #3597).
QUEUE_CONTROLLER_FIELDS = frozenset({"state", "pending", "inqueue", "running", "unknown", "completed"})


@dataclass(slots=True, eq=False)
class QueueInfo:
    name: str
    weight: int
    capability: dict[str, float]
    deserved: dict[str, float]
    guarantee: dict[str, float]
    reclaimable: bool
    priority: int
    parent: str | None
    state: str  # Open | Closing | Closed | Unknown
    creation: str = ""
    hierarchy: str = ""  # annotation volcano.sh/hierarchy ("root/a/b"), drf's HDRF path
    hierarchy_weights: str = ""  # annotation volcano.sh/hierarchy-weights ("1/2/3")
    # namespaces that may submit (annotation caldera.sh/allowed-namespaces); None: all
    tenants: frozenset[str] | None = None
    node_groups: NodeGroupAffinity | None = None  # spec.affinity (the nodegroup plugin's)
    annotations: dict[str, str] = field(default_factory=dict)  # as read (plugins keep records there)

    @property
    def is_open(self) -> bool:
        return self.state == "Open"

    def admits(self, namespace: str) -> bool:
        return self.tenants is None or namespace in self.tenants


class FitErrors:
    """Why a task fits no node: reason -> number of nodes, rendered like kube-scheduler."""

    __slots__ = ("total", "reasons")

    def __init__(self, total: int):
        self.total = total
        self.reasons: dict[str, int] = {}

    def add(self, reason: str, count: int) -> None:
        if count:
            self.reasons[reason] = self.reasons.get(reason, 0) + count

    def __str__(self) -> str:
        parts = ", ".join(f"{n} {r}" for r, n in sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"0/{self.total} nodes are unavailable: {parts}." if parts else f"0/{self.total} nodes are available."
