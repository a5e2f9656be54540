"""The cluster cache: the scheduler's model of the cluster, updated one object at a time.

Both feeds use it the same way: the manifest loader of `caldera simulate` and the Kubernetes
adapter's informers call `apply(obj)` for every added or changed object and `delete(...)` for
removed ones. Parsing happens here, once per change, so opening a session costs nothing when
nothing changed. A session then works on these very objects and undoes its session-only
changes (pipelines) when it closes.

Every task status change goes through `set_status`, which keeps the node table, the node's
task set and the job's counters in step.

A pod the cycle bound is Binding until the API shows it bound: that status is the one record
of a bind in flight (assume-then-bind, as kube-scheduler's and Volcano's caches do). The node
stays charged for it against watch updates that do not show the binding yet; it ends when an
update shows the pod bound, when the pod is deleted, or when a failed bind is reported (the
scheduler then deletes the pod here and shows it again as the API has it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from central.errors import InputError
from central.model import parse
from central.model.drastore import DRA_KINDS, DraStore
from central.model.fields import object_ref
from central.model.hypernodes import HyperNodeSpec, parse_hypernode
from central.model.nodedata import NodeData
from central.model.nodetable import NodeTable
from central.model.objects import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    STARTING_STATUSES,
    TERMINATED_STATUSES,
    JobInfo,
    NodeInfo,
    PodTemplate,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    next_version,
)
from central.model.policy import PdbInfo, ResourceQuotaInfo, parse_pdb, parse_resource_quota
from central.model.queuesums import QueueSums
from central.model.topology import Topology
from central.model.volumes import VOLUME_KINDS, VolumeStore, in_tree_limits
from central.resources.vectors import Dimensions, add_repeated, canonical

T = TypeVar("T")
KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "HyperNode", *VOLUME_KINDS, "ResourceQuota",
         "PodDisruptionBudget", *DRA_KINDS)
BATCH_CPU = "kubernetes.io/batch-cpu"  # millicores, as Volcano's agent publishes them
BATCH_MEMORY = "kubernetes.io/batch-memory"  # bytes


def _count_in_job(job: JobInfo, task: TaskInfo, sign: int) -> None:
    """Count the task in (+1) or out (-1) of its job's sums; the caller bumps the job's version."""
    status = task.status
    job.counts[status] = job.counts.get(status, 0) + sign
    key = (task.role, status)
    job.role_counts[key] = job.role_counts.get(key, 0) + sign
    if status in READY_STATUSES:
        job.ready += sign
        job.role_ready[task.role] = job.role_ready.get(task.role, 0) + sign
    # the cache lays out the task's vector and the job's sums before it counts a task in
    resreq, allocated, pending = task.resreq, job.allocated, job.pending_request
    assert resreq is not None and allocated is not None and pending is not None
    if status in ALLOCATED_STATUSES:
        if sign > 0:
            allocated += resreq
        else:
            allocated -= resreq
    elif status == TaskStatus.PENDING:
        if sign > 0:
            pending += resreq
        else:
            pending -= resreq
        if task.best_effort:
            job.best_effort_pending[task.role] = job.best_effort_pending.get(task.role, 0) + sign


def _take_tasks(job: JobInfo, old: JobInfo) -> None:
    """`job` replaces `old` (same PodGroup): it takes over the tasks and what is counted of them."""
    job.tasks, job.counts, job.role_counts = old.tasks, old.counts, old.role_counts
    job.ready, job.role_ready, job.best_effort_pending = old.ready, old.role_ready, old.best_effort_pending
    job.allocated, job.pending_request = old.allocated, old.pending_request


def _recount(job: JobInfo, role: str, was: TaskStatus, status: TaskStatus) -> None:
    counts, roles = job.counts, job.role_counts
    counts[was] = counts.get(was, 0) - 1
    counts[status] = counts.get(status, 0) + 1
    roles[role, was] = roles.get((role, was), 0) - 1
    roles[role, status] = roles.get((role, status), 0) + 1
    if (was in READY_STATUSES) != (status in READY_STATUSES):  # Succeeded <-> Failed, say
        sign = 1 if status in READY_STATUSES else -1
        job.ready += sign
        job.role_ready[role] = job.role_ready.get(role, 0) + sign


def _keep_binding(task: TaskInfo, node: str | None) -> None:
    """A bind is in flight for `task` (the API has not shown the pod bound yet): a version of
    the pod that does not show the binding (a label change, a stale event, a re-list) keeps it
    on the node the cycle charged, or the next cycle would place it a second time (Volcano
    #1857). Its phase still counts: a pod being deleted is Releasing there."""
    task.node = node
    if task.status == TaskStatus.PENDING:
        task.status = TaskStatus.BINDING


def _charge_factors(status: TaskStatus) -> tuple[float, float, float]:
    """How a task in `status` is charged to its node: (used, releasing, pipelined)."""
    if status == TaskStatus.PIPELINED:
        return 0.0, 0.0, 1.0
    if status == TaskStatus.RELEASING:
        return 1.0, 1.0, 0.0
    return 1.0, 0.0, 0.0


# Statuses that charge the node, the job's sums and the starting set alike: a task moving
# between two of one class changes only the job's counters.
_CHARGED_AS = {status: (status in TERMINATED_STATUSES or status == TaskStatus.PENDING, _charge_factors(status),
                        status in ALLOCATED_STATUSES, status in STARTING_STATUSES, status == TaskStatus.PENDING)
               for status in TaskStatus}


class ClusterCache:
    def __init__(self, scheduler_name: str = "volcano", default_queue: str = "default"):
        self.scheduler_name = scheduler_name
        self.default_queue = default_queue
        self.dims = Dimensions()
        self.nodes: dict[str, NodeInfo] = {}
        self.node_list: list[NodeInfo] = []  # by row
        self.table = NodeTable(0, len(self.dims))
        self.tasks: dict[str, TaskInfo] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, tuple[int, bool]] = {}
        self.quotas: dict[str, dict[str, ResourceQuotaInfo]] = {}  # namespace -> name -> quota
        self.pdbs: dict[str, PdbInfo] = {}  # "ns/name" -> PodDisruptionBudget
        self._templates: dict[str, PodTemplate] = {}  # text of a pod spec's template view -> template
        # equal templates -> one object: allocate batches a pod's twins by identity, which the
        # memo alone would split across its clearing (or where equal views differ in text)
        self._shared_templates: dict[PodTemplate, PodTemplate] = {}
        self._vectors: dict[tuple[tuple[str, float], ...], np.ndarray] = {}
        self._orphans: dict[str, set[str]] = {}  # node name -> tasks bound there before the node arrived
        self.node_data: dict[str, NodeData] = {}  # the latest agent report per node
        self.node_data_faults: dict[str, str] = {}  # node -> why its agent's latest report was refused
        self.batch_changed: set[str] = set()  # nodes whose batch resources are not published yet
        self.hypernodes: dict[str, HyperNodeSpec] = {}
        self.volumes = VolumeStore()  # claims, volumes, storage classes, CSI attach limits
        self.dra = DraStore()  # device classes, resource slices, resource claims and their templates
        self._topology: Topology | None = None  # built on demand, dropped when nodes or HyperNodes change
        self.starting: dict[str, TaskInfo] = {}  # placed, not running yet (few in a steady state)
        self.anti_affine: dict[str, TaskInfo] = {}  # tasks with required pod anti-affinity (few, if any)
        self.node_generation = 0  # bumped when a Node comes or goes, or its labels, taints or cordon change
        self._node_derived: dict[str, tuple[int, Any]] = {}
        self.plugin_memory: dict[tuple[str, str], Any] = {}  # (plugin, key) -> what it keeps across sessions
        self.queue_sums = QueueSums()  # per-queue sums over jobs, updated for the jobs that changed
        self.rest_conf: object = None  # the configuration of the close that stamped jobs' `rest`
        self.kept_views: Any = None  # template views the last session left for the next (central.framework.placement)
        # Every job added, changed or dropped since a session last found it at rest (a dict for
        # its order): a superset of the jobs not at rest, which `restless_jobs` narrows down.
        self.unrested: dict[str, None] = {}
        # The jobs a session considers (`scheduling_jobs`), kept across sessions: only those in
        # `unrested` are looked at again; a Queue that comes, goes or changes its parent or
        # tenants, or a new job filter, has every job looked at (None).
        self._scheduling: dict[str, JobInfo] | None = None
        self._scheduling_filter: Callable[[JobInfo], bool] | None = None
        # the status each job's last close gave it (`central.framework.closing`), and its
        # reason to be Unschedulable where it had one: of the jobs sessions consider only
        self.closed_statuses: dict[str, dict[str, Any]] = {}
        self.closed_unschedulable: dict[str, str] = {}
        # While a session is open: task, status, node before each status change, flat (three
        # entries per change: one list for the garbage collector to walk, not a tuple per
        # change), so that a failed session can be rolled back (Session.rollback).
        self.journal: list[Any] | None = None
        # Which jobs a session may consider, beyond the queue checks (None: all). A sharded
        # replica that is not the leader leaves Pending jobs to the leader's enqueue.
        self.job_filter: Callable[[JobInfo], bool] | None = None
        # The nodes a session may place on (a sharded scheduler's NodeShard); None: every node.
        # The others still count in totals and queue shares, as in Volcano's hard sharding.
        self.shard: frozenset[str] | None = None

    # --- feeding ----------------------------------------------------------------------------

    @cached_property
    def _appliers(self) -> dict[object, Callable[[Mapping[str, Any]], None]]:
        """Each kind's handler (made once: every watch event passes here)."""
        return {"Node": self._apply_node, "Pod": self._apply_pod, "PodGroup": self._apply_podgroup,
                "Queue": self._apply_queue, "PriorityClass": self._apply_priority_class,
                "HyperNode": self._apply_hypernode, **{kind: self.volumes.apply for kind in VOLUME_KINDS},
                **{kind: self.dra.apply for kind in DRA_KINDS},
                "ResourceQuota": self._apply_resource_quota, "PodDisruptionBudget": self._apply_pdb}

    def apply(self, obj: Mapping[str, Any]) -> None:
        """Add or replace one object. InputError names the object and field; nothing changes then."""
        kind: object = obj.get("kind") if isinstance(obj, Mapping) else None
        handler = self._appliers.get(kind)
        if handler is None:
            raise InputError("kind", f"unsupported kind {kind!r}; supported: {', '.join(KINDS)}")
        try:
            handler(obj)
        except InputError as err:
            raise err.within(object_ref(obj)) from None

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        key = f"{namespace}/{name}" if namespace else name
        if kind == "Pod" and key in self.tasks:
            self._remove_task(self.tasks[key])
        elif kind == "Node" and name in self.nodes:
            self.volumes.in_tree_limits.pop(name, None)
            self._remove_node(name)
            self._topology = None
        elif kind == "HyperNode":
            self.hypernodes.pop(name, None)
            self._topology = None
        elif kind == "PodGroup" and key in self.jobs:
            job = self.jobs[key]
            self._moved(key)
            if job.tasks:  # as if the PodGroup had never come: the same state whatever the order
                placeholder = self._placeholder(job.uid, job.name, job.namespace)
                _take_tasks(placeholder, job)
                self.jobs[key] = placeholder
            else:
                del self.jobs[key]
        elif kind == "Queue":
            self.queues.pop(name, None)
            self._scheduling = None
        elif kind == "PriorityClass":
            self.priority_classes.pop(name, None)
            self._resolve_priorities()
        elif kind in VOLUME_KINDS:
            self.volumes.delete(kind, key)
        elif kind in DRA_KINDS:
            self.dra.delete(kind, key)
        elif kind == "ResourceQuota":
            in_namespace = self.quotas.get(namespace or "default", {})
            in_namespace.pop(name, None)
            if not in_namespace:
                self.quotas.pop(namespace or "default", None)
        elif kind == "PodDisruptionBudget":
            self.pdbs.pop(key, None)

    def _apply_node(self, obj: Mapping[str, Any]) -> None:
        node = parse.parse_node(obj)
        limits = in_tree_limits(obj)
        if limits or node.name in self.volumes.in_tree_limits:
            self.volumes.in_tree_limits[node.name] = limits
        grew = any(self.dims.add(name) for name in node.allocatable)
        old = self.nodes.get(node.name)
        if old is None or (old.labels, old.taints, old.unschedulable) != (node.labels, node.taints, node.unschedulable):
            self.node_generation += 1  # a status or annotation write (a kubelet's, the TTL controller's) keeps it
        if old is None or old.labels != node.labels:  # HyperNodes select nodes by name and labels
            self._topology = None
        if old is not None:
            node.index, node.tasks = old.index, old.tasks
            self.node_list[node.index] = node
        else:
            node.index = len(self.node_list)
            self.node_list.append(node)
        self.nodes[node.name] = node
        if grew or node.index >= self.table.size:
            self._rebuild_table()
        else:
            self._refresh_node(node)

    def _apply_pod(self, obj: Mapping[str, Any]) -> None:
        if len(self._templates) > 100_000:  # bounded: a memo, not a record
            self._templates.clear()
        if len(self._shared_templates) > 100_000:  # as many as distinct templates: cleared only if they are many
            self._shared_templates.clear()
        task, group = parse.parse_pod(obj, self._templates)
        task.template = self._shared_templates.setdefault(task.template, task.template)
        if any(self.dims.add(name) for name, _ in task.template.resreq):
            self._rebuild_table()
        self._vectorise(task)
        old = self.tasks.get(task.uid)
        if old is not None:
            if old.status == TaskStatus.BINDING and task.node is None:
                _keep_binding(task, old.node)
            self._remove_task(old)
        task.priority = self._task_priority(task)
        if task.scheduler_name == self.scheduler_name:
            job = self._job_for(task, group)
            task.job_uid = job.uid
            job.tasks[task.uid] = task
        self.tasks[task.uid] = task
        if task.template.pod_anti_affinity:
            self.anti_affine[task.uid] = task
        self._charge(task, +1)

    def _apply_podgroup(self, obj: Mapping[str, Any]) -> None:
        job = parse.parse_podgroup(obj)
        for name in (job.min_resources or {}):
            if self.dims.add(name):
                self._rebuild_table()
        old = self.jobs.get(job.uid)
        if old is not None:
            _take_tasks(job, old)
        else:
            job.allocated, job.pending_request = self.dims.zeros(), self.dims.zeros()
        job.priority = self._class_priority(job.priority_class)
        self._vectorise_job(job)
        self.touch(job)  # a new JobInfo: newer than any mark taken before it
        self.jobs[job.uid] = job

    def _apply_hypernode(self, obj: Mapping[str, Any]) -> None:
        spec = parse_hypernode(obj)
        self.hypernodes[spec.name] = spec
        self._topology = None

    def _apply_queue(self, obj: Mapping[str, Any]) -> None:
        queue = parse.parse_queue(obj)
        for name in [*queue.capability, *queue.deserved, *queue.guarantee]:
            if self.dims.add(name):
                self._rebuild_table()
        old = self.queues.get(queue.name)
        if old is None or (old.parent, old.tenants) != (queue.parent, queue.tenants):  # not a status write
            self._scheduling = None
        self.queues[queue.name] = queue

    def _apply_resource_quota(self, obj: Mapping[str, Any]) -> None:
        quota = parse_resource_quota(obj)
        self.quotas.setdefault(quota.namespace, {})[quota.name] = quota

    def _apply_pdb(self, obj: Mapping[str, Any]) -> None:
        pdb = parse_pdb(obj)
        self.pdbs[f"{pdb.namespace}/{pdb.name}"] = pdb

    def _apply_priority_class(self, obj: Mapping[str, Any]) -> None:
        name, value, global_default = parse.parse_priority_class(obj)
        self.priority_classes[name] = (value, global_default)
        self._resolve_priorities()

    def set_node_data(self, data: NodeData) -> None:
        """The latest agent report for a node (kept even before the Node object arrives).

        Batch (oversubscribed) resources it reports extend the node's allocatable as
        kubernetes.io/batch-cpu and kubernetes.io/batch-memory, which offline pods request.
        """
        old = self.node_data.get(data.node)
        self.node_data[data.node] = data
        self.node_data_faults.pop(data.node, None)
        if old is None or (old.batch_cpu, old.batch_memory) != (data.batch_cpu, data.batch_memory):
            self.batch_changed.add(data.node)
            node = self.nodes.get(data.node)
            if node is not None:
                self._refresh_node(node)

    def refuse_node_data(self, node: str, reason: str) -> None:
        """The agent's latest report for `node` was refused (`reason` says which field): what it
        said before goes too, batch resources included, and each session faults the node (no
        placement there) until a report is accepted."""
        old = self.node_data.pop(node, None)
        self.node_data_faults[node] = reason
        if old is not None and (old.batch_cpu or old.batch_memory):
            self.batch_changed.add(node)
            known = self.nodes.get(node)
            if known is not None:
                self._refresh_node(known)

    def take_batch_changes(self) -> dict[str, dict[str, str]]:
        """Nodes whose batch resources changed since last taken, as the Node status should
        show them (Volcano's agent publishes millicores and bytes as plain integers)."""
        changed, self.batch_changed = self.batch_changed, set()
        out = {}
        for name in sorted(changed):
            data = self.node_data.get(name)  # None: refused, so none is offered
            out[name] = {BATCH_CPU: str(int(data.batch_cpu if data else 0)),
                         BATCH_MEMORY: str(int(data.batch_memory if data else 0))}
        return out

    def batch_resources(self, name: str) -> dict[str, float]:
        """The batch resources last reported for a node, in canonical units."""
        data = self.node_data.get(name)
        if data is None or not (data.batch_cpu or data.batch_memory):
            return {}
        return {BATCH_CPU: canonical(BATCH_CPU, Decimal(repr(data.batch_cpu))),
                BATCH_MEMORY: canonical(BATCH_MEMORY, Decimal(repr(data.batch_memory)))}

    # --- queries ----------------------------------------------------------------------------

    @staticmethod
    def version_mark() -> int:
        """A version newer than every job's last change so far and older than every later
        one: a job whose `version` is below a mark taken at session open has not changed since."""
        return next_version()

    def node_derived(self, key: str, build: Callable[[], T]) -> T:
        """What `build` makes from the Node objects' names, labels, taints and unschedulable
        alone, kept across sessions until a Node is added or removed or one of those changes,
        so that a session over an unchanged node set does not lay it out again."""
        kept = self._node_derived.get(key)
        if kept is None or kept[0] != self.node_generation:
            kept = self._node_derived[key] = (self.node_generation, build())
        return kept[1]

    def topology(self) -> Topology:
        """The HyperNode tree over the current node rows."""
        if self._topology is None or self._topology.size != self.table.size:
            self._topology = Topology(self.hypernodes, self.node_list, self.table.size)
        return self._topology

    def queue(self, name: str) -> QueueInfo | None:
        """Queues `root` and the default queue exist even when no object names them."""
        found = self.queues.get(name)
        if found is None and name in ("root", self.default_queue):
            found = QueueInfo(name=name, weight=1, capability={}, deserved={}, guarantee={},
                              reclaimable=name != "root", priority=0, parent=None if name == "root" else "root",
                              state="Open")
            self.queues[name] = found
        return found

    def all_queues(self) -> dict[str, QueueInfo]:
        self.queue("root")
        self.queue(self.default_queue)
        return self.queues

    def iter_scheduling_jobs(self) -> Iterator[JobInfo]:
        """Jobs a session considers: with a PodGroup and an existing queue (as Volcano's snapshot)
        that admits the job's namespace (queue tenancy, which admission checks first)."""
        admits: dict[tuple[str, str], bool] = {}  # (queue, namespace) -> answer: queues hold still meanwhile
        keep = self.job_filter
        for job in self.jobs.values():
            if not job.has_podgroup or (keep is not None and not keep(job)):
                continue
            key = (job.queue, job.namespace)
            ok = admits.get(key)
            if ok is None:
                ok = admits[key] = self.queue(job.queue) is not None and self.queue_admits(job.queue, job.namespace)
            if ok:
                yield job

    def scheduling_jobs(self) -> dict[str, JobInfo]:
        """`iter_scheduling_jobs` as a dict of its own, kept across sessions: only the jobs
        changed since (`unrested`) are looked at again, unless the queues or the filter changed."""
        view, keep = self._scheduling, self.job_filter
        if view is None or keep is not self._scheduling_filter:
            view = self._scheduling = {job.uid: job for job in self.iter_scheduling_jobs()}
            self._scheduling_filter = keep
            self.queue_sums.forget()  # jobs may have joined unchanged: the sums look at every one
            for uid in [uid for uid in self.closed_statuses if uid not in view]:
                self._drop_status(uid)
        else:
            jobs = self.jobs
            for uid in self.unrested:
                job = jobs.get(uid)
                if job is not None and job.has_podgroup and (keep is None or keep(job)) \
                        and self.queue(job.queue) is not None and self.queue_admits(job.queue, job.namespace):
                    view[uid] = job
                elif view.pop(uid, None) is not None:
                    self._drop_status(uid)
        return dict(view)

    def _drop_status(self, uid: str) -> None:
        """The job left the sessions: its last status is no session's (it is on `JobInfo.closed`)."""
        self.closed_statuses.pop(uid, None)
        self.closed_unschedulable.pop(uid, None)

    def restless_jobs(self, jobs: Mapping[str, JobInfo]) -> dict[str, JobInfo]:
        """Of a session's `jobs`, those not at rest (`JobInfo.rest`): all of them but those a
        session found at rest and that have not changed since. Call it after `scheduling_jobs`:
        it forgets the jobs it finds at rest or gone."""
        out, unrested, known = {}, self.unrested, self.jobs
        for uid in list(unrested):
            job = jobs.get(uid)
            if job is None:
                if uid not in known:
                    del unrested[uid]
            elif job.rest == job.version:
                del unrested[uid]
            else:
                out[uid] = job
        return out

    def queue_admits(self, name: str, namespace: str) -> bool:
        """Whether the queue and each of its ancestors let `namespace` submit."""
        seen: set[str] = set()
        queue = self.queues.get(name)
        while queue is not None and queue.name not in seen:
            if not queue.admits(namespace):
                return False
            seen.add(queue.name)
            queue = self.queues.get(queue.parent or "")
        return True

    # --- task status: the one place it changes ------------------------------------------------

    def set_status(self, task: TaskInfo, status: TaskStatus, node: str | None) -> None:
        if self.journal is not None:
            self.journal += (task, task.status, task.node)
        if node == task.node and _CHARGED_AS[status] == _CHARGED_AS[task.status]:
            # ALLOCATED -> BINDING, say: the node and the job's sums stay as they are
            job = self.jobs.get(task.job_uid) if task.job_uid else None
            if job is not None:
                _recount(job, task.role, task.status, status)
                self.touch(job)
            task.status = status
            return
        self._charge(task, -1)
        task.status, task.node = status, node
        self._charge(task, +1)

    def allocate_run(self, tasks: Sequence[TaskInfo], nodes: Sequence[NodeInfo]) -> None:
        """`set_status(task, ALLOCATED, node.name)` for each task in turn, for pending pods of one
        template and one job that request resources: the per-pod records one by one, the sums
        (the job's, the node table's) added once with the figures one by one gives."""
        first = tasks[0]
        job = self.jobs.get(first.job_uid) if first.job_uid else None
        req = first.resreq
        assert req is not None and job is not None and job.allocated is not None and job.pending_request is not None
        allocated, pending = TaskStatus.ALLOCATED, TaskStatus.PENDING
        journal, starting, counts, roles = self.journal, self.starting, job.counts, job.role_counts
        if len(tasks) != len(nodes) or first.best_effort or any(
                task.status != pending or task.node is not None or task.resreq is not req or task.job_uid != job.uid
                for task in tasks):
            raise ValueError("a run is of pending pods of one template and one job, each with a node")
        # nothing fails from here on: the journal (the session's rollback) holds what changed
        for task, node in zip(tasks, nodes):
            if journal is not None:
                journal += (task, pending, None)
            task.status, task.node = allocated, node.name
            starting[task.uid] = task
            node.tasks[task.uid] = task
            role = task.role
            roles[role, pending] = roles.get((role, pending), 0) - 1
            roles[role, allocated] = roles.get((role, allocated), 0) + 1
            job.role_ready[role] = job.role_ready.get(role, 0) + 1
        count = len(tasks)
        self.touch(job)  # as set_status's recount does: the job's pods changed
        counts[pending] = counts.get(pending, 0) - count
        counts[allocated] = counts.get(allocated, 0) + count
        job.ready += count
        add_repeated(job.pending_request, req, count, -1)
        add_repeated(job.allocated, req, count)
        self.table.charge_rows(np.fromiter((node.index for node in nodes), np.int64, count), req)

    def touch(self, job: JobInfo) -> None:
        """The job changed: a version newer than every mark so far (`version_mark`), and
        everything kept of it across sessions is worked out anew."""
        job.version = next_version()
        self._moved(job.uid)

    def _moved(self, uid: str) -> None:
        """The job changed, came or went: what is kept of it across sessions is looked at again."""
        self.unrested[uid] = None
        self.queue_sums.moved[uid] = None

    def _charge(self, task: TaskInfo, sign: int) -> None:
        if task.status in STARTING_STATUSES:
            if sign > 0:
                self.starting[task.uid] = task
            else:
                self.starting.pop(task.uid, None)
        job = self.jobs.get(task.job_uid) if task.job_uid else None
        if job is not None:
            _count_in_job(job, task, sign)
            self.touch(job)
        node = self.nodes.get(task.node) if task.node else None
        if task.status in TERMINATED_STATUSES or task.status == TaskStatus.PENDING:
            return
        if node is None:
            if task.node:
                orphans = self._orphans.setdefault(task.node, set())
                orphans.add(task.uid) if sign > 0 else orphans.discard(task.uid)
            return
        used, releasing, pipelined = _charge_factors(task.status)
        assert task.resreq is not None  # laid out when the task came in
        self.table.charge(node.index, task.resreq, sign * used, sign * releasing, sign * pipelined, sign)
        if sign > 0:
            node.tasks[task.uid] = task
        else:
            node.tasks.pop(task.uid, None)

    # --- internals --------------------------------------------------------------------------

    def _job_for(self, task: TaskInfo, group: str | None) -> JobInfo:
        if group is None:
            implicit = parse.implicit_job(task)
            implicit.priority = self._class_priority(implicit.priority_class)
            implicit.allocated, implicit.pending_request = self.dims.zeros(), self.dims.zeros()
            self._vectorise_job(implicit)
            return self.jobs.setdefault(implicit.uid, implicit)
        uid = f"{task.namespace}/{group}"
        job = self.jobs.get(uid)
        if job is None:  # the PodGroup has not arrived yet
            job = self.jobs[uid] = self._placeholder(uid, group, task.namespace)
        return job

    def _placeholder(self, uid: str, name: str, namespace: str) -> JobInfo:
        """The job of pods whose PodGroup is not (or no longer) there: never scheduled."""
        job = JobInfo(uid=uid, name=name, namespace=namespace, queue="", priority=0, min_available=0,
                      task_min_available={}, min_resources=None, phase="Pending", creation="",
                      has_podgroup=False, allocated=self.dims.zeros(), pending_request=self.dims.zeros())
        self._vectorise_job(job)
        return job

    def _remove_task(self, task: TaskInfo) -> None:
        self._charge(task, -1)
        del self.tasks[task.uid]
        self.anti_affine.pop(task.uid, None)
        job = self.jobs.get(task.job_uid)
        if job is not None:
            job.tasks.pop(task.uid, None)
            if not job.tasks and (job.implicit or not job.has_podgroup):
                del self.jobs[job.uid]

    def _remove_node(self, name: str) -> None:
        self.node_generation += 1
        node = self.nodes.pop(name)
        self.node_list.pop(node.index)
        if node.tasks:  # still bound there: charged again if the node comes back (re-registers)
            self._orphans.setdefault(name, set()).update(node.tasks)
        for i, other in enumerate(self.node_list):
            other.index = i
        self._rebuild_table()

    def _vectorise(self, task: TaskInfo) -> None:
        task.resreq = self._vector(task.template.resreq)

    def _vectorise_job(self, job: JobInfo) -> None:
        job.min_request = self._vector(tuple(sorted((job.min_resources or {}).items())))

    def _vector(self, items: tuple[tuple[str, float], ...]) -> np.ndarray:
        vec = self._vectors.get(items)
        if vec is None:
            vec = self.dims.vector(dict(items))
            vec.flags.writeable = False  # shared by every pod of the template
            self._vectors[items] = vec
        return vec

    def _refresh_node(self, node: NodeInfo) -> None:
        if any(self.dims.add(name) for name in self.batch_resources(node.name)):
            self._rebuild_table()
        else:
            self._fill_row(node)

    def _fill_row(self, node: NodeInfo) -> None:
        t, row = self.table, node.index
        t.alloc[row] = self.dims.vector({**node.allocatable, **self.batch_resources(node.name)})
        t.used[row] = 0
        t.releasing[row] = 0
        t.pipelined[row] = 0
        t.pods[row] = 0
        t.releasing_pods[row] = 0
        t.max_pods[row] = node.max_pods
        t.idle[row] = t.alloc[row]
        t.touch(row)
        tasks, node.tasks = list(node.tasks.values()), {}
        tasks += [self.tasks[uid] for uid in self._orphans.pop(node.name, ()) if uid in self.tasks]
        for task in tasks:
            if task.node == node.name:
                self._charge_node_only(task)

    def _charge_node_only(self, task: TaskInfo) -> None:
        job_uid, task.job_uid = task.job_uid, ""
        self._charge(task, +1)
        task.job_uid = job_uid

    def _rebuild_table(self) -> None:
        """Re-lay every vector over the current dimensions (a new resource name appeared)."""
        self._vectors.clear()
        for task in self.tasks.values():
            self._vectorise(task)
        for job in self.jobs.values():
            self._vectorise_job(job)
            job.allocated, job.pending_request = self.dims.zeros(), self.dims.zeros()
            job.counts, job.role_counts, job.best_effort_pending = {}, {}, {}
            job.ready, job.role_ready = 0, {}
            for task in job.tasks.values():
                _count_in_job(job, task, +1)
            self.touch(job)
        self.table = NodeTable(max(16, 2 * len(self.node_list)), len(self.dims))
        for node in self.node_list:
            self._fill_row(node)

    def _class_priority(self, class_name: str) -> int:
        if class_name in self.priority_classes:
            return self.priority_classes[class_name][0]
        return next((value for value, default in self.priority_classes.values() if default), 0)

    def _task_priority(self, task: TaskInfo) -> int:
        return task.spec_priority if task.spec_priority is not None else self._class_priority(task.priority_class)

    def _resolve_priorities(self) -> None:
        for task in self.tasks.values():
            task.priority = self._task_priority(task)
        for job in self.jobs.values():
            job.priority = self._class_priority(job.priority_class)
