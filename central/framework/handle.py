"""What a plugin sees of its session: a narrow, typed handle.

A plugin reads the cycle's snapshot (node rows and the node table, jobs, queues, the clock)
and the views the plugins of a session share (node index, agent reports), and records what
it decides through calls: why a job was held back (notes, which become the
why-pending text), PodGroup conditions, pod annotations, the objects whose data it could not
use (faults), and what it keeps beyond the session. It never reaches the session's own
bookkeeping (statements, binds, evictions, the rollback log): what a plugin may change is
what this class lists. One handle serves every plugin of a session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from central.framework.agentview import AgentView
from central.framework.decisions import Decisions
from central.framework.faults import Faults
from central.framework.journal import Journal
from central.framework.nodeindex import NodeIndex
from central.framework.notes import Notes
from central.model.cache import ClusterCache
from central.model.dra import DeviceClaimWrite
from central.model.drastore import DraStore
from central.model.objects import JobInfo, NodeInfo, QueueInfo, TaskInfo
from central.model.policy import PdbInfo, ResourceQuotaInfo
from central.model.queuesums import QueueSum
from central.model.topology import Topology
from central.model.volumes import ClaimBinding, VolumeStore

if TYPE_CHECKING:
    from central.model.nodetable import NodeTable
    from central.resources.vectors import Dimensions


_NOT_YET = object()


class Handle:
    def __init__(self, cache: ClusterCache, now: datetime, jobs: Mapping[str, JobInfo],
                 queues: Mapping[str, QueueInfo], total: np.ndarray, notes: Notes, faults: Faults,
                 journal: Journal, decisions: Decisions, queue_gate_admission: bool = False):
        self._cache, self._notes, self._faults = cache, notes, faults
        self.queue_gate_admission = queue_gate_admission  # SchedulingGatesQueueAdmission is on
        self._journal, self._decisions = journal, decisions
        self.now: datetime = now  # the cycle's clock
        self.dims: Dimensions = cache.dims
        self.nodes: Sequence[NodeInfo] = cache.node_list  # by row
        self.node_generation = cache.node_generation  # moves when a Node comes, goes or changes its labels, taints, cordon
        self.total: np.ndarray = total  # allocatable of all nodes
        self.table: NodeTable = cache.table  # per-row resource columns, kept current by statements
        self.jobs: Mapping[str, JobInfo] = jobs  # the session's jobs, by uid
        self.queues: Mapping[str, QueueInfo] = queues
        # the cache's own maps, read-only here
        self.nodes_by_name: Mapping[str, NodeInfo] = MappingProxyType(cache.nodes)
        self.tasks: Mapping[str, TaskInfo] = MappingProxyType(cache.tasks)  # every pod the scheduler knows
        self.starting: Mapping[str, TaskInfo] = MappingProxyType(cache.starting)  # placed, not running yet
        self.anti_affine: Mapping[str, TaskInfo] = MappingProxyType(cache.anti_affine)  # pods with required anti-affinity
        self.quotas: Mapping[str, Mapping[str, ResourceQuotaInfo]] = MappingProxyType(cache.quotas)  # by namespace, name
        self.pdbs: Mapping[str, PdbInfo] = MappingProxyType(cache.pdbs)  # by "ns/name"
        # recorded through these calls only
        self.note_job = notes.note_job  # why a gate held the job back (the latest note counts)
        self.job_note = notes.job_note
        self.set_condition = notes.set_condition  # the PodGroup condition the job ends the session with
        self.set_side_condition = notes.set_side_condition  # a plugin's own condition type, beside it
        self.job_event = notes.job_event  # an Event on the job's PodGroup
        self.placed_then_discarded = decisions.placed_then_discarded
        self.fault_job = faults.fault_job
        self.fault_task = faults.fault_task
        self.fault_node = faults.fault_node  # exclude=False: only reported, the plugin confined the damage
        self.fault_hypernode = faults.fault_hypernode  # left out of the topology this session
        self.recall = journal.recall
        # the session's configured job order, set once every plugin is open (ask it lazily)
        self.job_less: Callable[[JobInfo, JobInfo], bool] = lambda a, b: (a.creation, a.uid) < (b.creation, b.uid)
        self.remember = journal.remember  # kept for later sessions; a rolled back session takes it back
        # at close (on_session_close), the jobs whose status may differ from the one their last
        # close gave them; the others keep it, conditions included (`central.framework.closing`)
        self.closing_jobs: Callable[[], Iterable[JobInfo]] = lambda: jobs.values()
        self.opening = True  # the session sets it False once every plugin is open
        self._sums_at_open: object = _NOT_YET

    def queue_sums(self, changed: Iterable[JobInfo] | None = None) -> Mapping[str, QueueSum] | None:
        """Per queue, the sums over the session's jobs as they stand now (allocated, pending,
        admitted, elastic; read-only), updated for the jobs that changed since the cache last
        summed them; None where they would not be exact (sum from the jobs then). While the
        plugins open (`opening`) nothing changes the jobs: the first answer serves them all.
        `changed` (the close's): the only jobs that may have changed since the plugins opened;
        where they were given sums, the others' stamps are not looked at again."""
        if self.opening:
            if self._sums_at_open is _NOT_YET:  # since the last session, only the cache changed jobs
                kept = self._cache.queue_sums
                self._sums_at_open = kept.sums(self.jobs, self.dims, kept.changed_since_last(self.jobs))
            return self._sums_at_open  # type: ignore[return-value]
        # `changed` stands only against a call of this session (a None answer left the sums
        # without a mark, which `sums` checks)
        since_open = changed if self._sums_at_open is not _NOT_YET else None
        return self._cache.queue_sums.sums(self.jobs, self.dims, since_open)

    @cached_property
    def node_index(self) -> NodeIndex:
        """Label and taint lookups over node rows (kept across sessions while no Node comes,
        goes or changes its labels, taints or cordon: it depends on nothing else)."""
        return self._cache.node_derived("node_index", lambda: NodeIndex(self.nodes))

    @cached_property
    def topology(self) -> Topology:
        """The HyperNode tree over node rows (network-topology-aware scheduling)."""
        return self._cache.topology()

    @cached_property
    def agents(self) -> AgentView:
        """The agents' latest reports over node rows (fresh ones only)."""
        return AgentView(self.nodes, self._cache.node_data, self.now)

    # --- pod annotations, written before the bind ------------------------------------------

    def annotate(self, task: TaskInfo, key: str, value: str | None) -> None:
        """Record (None: withdraw) an annotation for the pod. Call it from on_allocate /
        on_deallocate, so a discarded statement takes it back."""
        self._notes.annotate(task, key, value)

    def annotation(self, task: TaskInfo, key: str) -> str | None:
        """What a plugin annotated on the pod this session."""
        return self._notes.annotation(task, key)

    # --- Queue annotations, written after the session closes -------------------------------

    def annotate_queue(self, queue: str, key: str, value: str) -> None:
        """Record an annotation for the Queue (what a plugin keeps beyond the scheduler's own
        life, read back from `QueueInfo.annotations`); a rolled back session writes nothing."""
        self._notes.annotate_queue(queue, key, value)

    # --- volumes --------------------------------------------------------------------------

    @property
    def dra(self) -> DraStore:
        """Device classes, resource slices and claims (read-only by convention)."""
        return self._cache.dra

    @property
    def volumes(self) -> VolumeStore:
        """Claims, volumes, storage classes and CSI attach limits (read-only by convention)."""
        return self._cache.volumes

    def bind_claims(self, task: TaskInfo, bindings: tuple[ClaimBinding, ...]) -> None:
        """Record (with none, withdraw) the claim bindings written before the pod's bind.
        Call it from on_allocate / on_deallocate, so a discarded statement takes it back."""
        self._notes.bind_claims(task, bindings)

    def reserve_device_claims(self, task: TaskInfo, writes: tuple[DeviceClaimWrite, ...]) -> None:
        """Record (with none, withdraw) the ResourceClaim allocations and reservations written
        before the pod's bind. Call it from on_allocate / on_deallocate, so a discarded
        statement takes it back."""
        self._notes.reserve_device_claims(task, writes)

    def is_faulted(self, job: JobInfo) -> bool:
        return self._faults.job_reason(job) is not None
