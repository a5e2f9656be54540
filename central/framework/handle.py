"""What a plugin sees of its session: a narrow, typed handle.

A plugin reads the cycle's snapshot (node rows and the node table, jobs, queues, the clock)
and the views the plugins of a session share (node index, agent reports), and records what
it decides through calls: why a job or a queue was held back (notes, which become the
why-pending text), PodGroup conditions, pod annotations, the objects whose data it could not
use (faults), and what it keeps beyond the session. It never reaches the session's own
bookkeeping (statements, binds, evictions, the rollback log): what a plugin may change is
what this class lists. One handle serves every plugin of a session.
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from central.errors import InputError
from central.framework.agentview import AgentView
from central.framework.nodeindex import NodeIndex
from central.framework.faults import Fault
from central.model.objects import JobInfo, NodeInfo, QueueInfo, TaskInfo
from central.model.topology import Topology

if TYPE_CHECKING:
    from central.resources.vectors import Dimensions
    from central.framework.session import Session
    from central.model.nodetable import NodeTable


class Handle:
    def __init__(self, ssn: "Session"):
        self._ssn = ssn
        cache = ssn.cache
        self.now: datetime = ssn.now  # the cycle's clock
        self.dims: Dimensions = ssn.dims
        self.nodes: list[NodeInfo] = ssn.nodes  # by row
        self.total: np.ndarray = ssn.total  # allocatable of all nodes
        self.table: NodeTable = cache.table  # per-row resource columns, kept current by statements
        self.nodes_by_name: dict[str, NodeInfo] = cache.nodes
        self.jobs: dict[str, JobInfo] = ssn.jobs  # the session's jobs, by uid
        self.queues: dict[str, QueueInfo] = ssn.queues
        self.tasks: dict[str, TaskInfo] = cache.tasks  # every pod the scheduler knows, by uid
        self.starting: dict[str, TaskInfo] = cache.starting  # placed, not running yet
        self.anti_affine: dict[str, TaskInfo] = cache.anti_affine  # pods with required pod anti-affinity

    @cached_property
    def node_index(self) -> NodeIndex:
        """Label and taint lookups over node rows (kept across sessions while no Node changes:
        it depends on nothing else)."""
        return self._ssn.cache.node_derived("node_index", lambda: NodeIndex(self.nodes))

    @cached_property
    def topology(self) -> Topology:
        """The HyperNode tree over node rows (network-topology-aware scheduling)."""
        return self._ssn.cache.topology()

    @cached_property
    def agents(self) -> AgentView:
        """The agents' latest reports over node rows (fresh ones only)."""
        return AgentView(self.nodes, self._ssn.cache.node_data, self.now)

    # --- notes and conditions (for people: why-pending text, PodGroup status) ----------------

    def note_job(self, job: JobInfo, text: str) -> None:
        """Why a gate held the job back (the latest note counts)."""
        self._ssn.job_notes[job.uid] = text

    def job_note(self, job: JobInfo) -> str | None:
        return self._ssn.job_notes.get(job.uid)

    def note_queue(self, queue: QueueInfo, text: str) -> None:
        """Why the queue's last allocatable check said no, with numbers."""
        self._ssn.queue_notes[queue.name] = text

    def set_condition(self, job: JobInfo, kind: str, reason: str, message: str) -> None:
        """The PodGroup condition the job ends the session with (one per session and job)."""
        self._ssn.job_conditions[job.uid] = self._ssn.condition(kind, reason, message)

    def placed_then_discarded(self, task: TaskInfo) -> bool:
        """Did a statement place the task this session and then discard it (it fits a node;
        its gang did not)?"""
        return bool(self._ssn.last_transaction.get(task.uid))

    # --- pod annotations, written before the bind ------------------------------------------

    def annotate(self, task: TaskInfo, key: str, value: str | None) -> None:
        """Record (None: withdraw) an annotation for the pod. Call it from on_allocate /
        on_deallocate, so a discarded statement takes it back."""
        self._ssn.annotate(task, key, value)

    def annotation(self, task: TaskInfo, key: str) -> str | None:
        """What a plugin annotated on the pod this session."""
        return self._ssn.pod_annotations.get(task.uid, {}).get(key)

    # --- faults (see central.framework.faults) ------------------------------------------------

    def fault_job(self, job: JobInfo, err: InputError, source: str) -> None:
        self._ssn.fault_job(job, err, source)

    def fault_task(self, task: TaskInfo, err: InputError, source: str) -> None:
        self._ssn.fault_task(task, err, source)

    def fault_node(self, node: NodeInfo, err: InputError, source: str, exclude: bool = True) -> None:
        """With `exclude=False` only reported: the plugin has confined the damage itself."""
        self._ssn.fault_node(node, err, source, exclude)

    def fault_hypernode(self, name: str, reason: str, source: str) -> None:
        """The HyperNode is left out of the topology this session (the tree is built without it)."""
        self._ssn.faults.setdefault(("HyperNode", name), Fault("HyperNode", name, source, reason))

    def is_faulted(self, job: JobInfo) -> bool:
        return job.uid in self._ssn.faulted_jobs

    # --- beyond the session -------------------------------------------------------------------

    def recall(self, plugin: str, key: str) -> Any:
        return self._ssn.recall(plugin, key)

    def remember(self, plugin: str, key: str, value: Any) -> None:
        """Keep `value` for later sessions; a rolled back session takes it back."""
        self._ssn.remember(plugin, key, value)
