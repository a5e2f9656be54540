"""allocate, for jobs with a network topology: place the gang inside one HyperNode.

Volcano's allocateForJob, for a job without subgroups:
1. Ask the plugins for the HyperNode gradients of the job (`hypernode_gradients`: lists of
   HyperNodes, lowest tier first). No plugin answers: the job is placed like any other.
2. Gradient by gradient, try the gang in its HyperNodes: the job's tasks in task order, on
   the HyperNode's nodes only, on a trial statement. A HyperNode where the job ends ready (or
   pipelined) is a solution.
3. The first gradient with a solution decides, and within it the solution with the highest
   `hypernode_order` score. Volcano tries every HyperNode of the gradient, then scores the
   solutions, each alone (a HyperNode's score does not depend on the trials), and takes the
   highest, a tie going to whichever its map yields first. Caldera scores first and tries
   the HyperNodes best first, keeping the first solution (its trial statement becomes the
   job's): the same choice, found after one trial where Volcano makes one per HyperNode.
   Ties are ordered by the plugins' scores of the tied group (network-topology-aware: the
   share of the job's tasks already inside), then breadth first, children by name.
4. No gradient has a solution: the job waits, and every pending task says why, naming
   the mode and the highest tier allowed and what the last HyperNode tried lacked.

Sub-groups (`subGroupPolicy`, Volcano's subjobs; a Job task's `partitionPolicy` becomes one,
see `central.model.subgroups`) are searched inside the job's HyperNode, or inside the whole
cluster for a job without a network topology of its own (Volcano's allocateForSubJob): each
sub-group whose topology is hard, in the order of its first task, goes through the same
search over the HyperNodes under the job's (`hypernode_gradients(job, group, within)`), and
is placed in the first (best) one where at least `subGroupSize` of its pods fit, or not at
all. The job's other pods are then placed anywhere in the job's HyperNode. A trial is a
solution when, besides the gang being ready (or pipelined), every policy with `minSubGroups`
has that many sub-groups placed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from central.framework.ordering import FixedLine
from central.model.objects import ALLOCATED_STATUSES, JobInfo, NetworkTopology, QueueInfo, TaskInfo, TaskStatus
from central.model.subgroups import SubGroup, sub_groups
from central.resources.vectors import format_value

if TYPE_CHECKING:
    from central.framework.action import ActionHandle
    from central.framework.statement import Statement
    from central.model.topology import HyperNode

PlaceTasks = Callable[..., None]  # allocate.place_tasks(handle, stmt, tasks, job, queue, within=mask)


PLACED = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED}


def place_in_hypernodes(handle: ActionHandle, stmt: "Statement", tasks: FixedLine[TaskInfo],
                        job: JobInfo, queue: QueueInfo, place_tasks: PlaceTasks) -> bool:
    """Place the job by HyperNode onto `stmt` with allocate's `place_tasks`; False when no
    plugin searches HyperNodes for it or its sub-groups."""
    gradients: Sequence[Sequence[HyperNode | None]] | None = _gradients(handle, job)
    if gradients is None:
        if not _searches_groups(handle, job):
            return False
        gradients = [[None]]  # the whole cluster: only the sub-groups are searched
    last: HyperNode | None = None
    for gradient in gradients:
        for hn in _search_order(handle, job, gradient):
            job.fit_errors = {}
            trial, left = handle.statement(), tasks.copy()
            _place_within(handle, trial, left, job, queue, hn, place_tasks)
            if trial.ops and (handle.job_ready(job) or handle.job_pipelined(job)) and _enough_groups(job):
                stmt.merge(trial)
                tasks.assign(left)  # what the trial left to place, in the same order
                return True
            trial.discard()
            last = hn
    _explain(handle, job, last)
    tasks.clear()  # tried as a whole: nothing of the job is left to try this round
    return True


def _place_within(handle: ActionHandle, trial: "Statement", left: FixedLine[TaskInfo], job: JobInfo,
                  queue: QueueInfo, hn: "HyperNode | None", place_tasks: PlaceTasks) -> None:
    """The job's pending tasks in `left` onto `trial` inside `hn` (None: anywhere): its
    searched sub-groups each in a HyperNode of their own first, then the rest."""
    if job.sub_group_policies:
        turn = {task.uid: i for i, task in enumerate(reversed(list(left)))}  # FixedLine pops from the end
        groups = [g for g in sub_groups(job.sub_group_policies, job.tasks.values()).values()
                  if any(t.uid in turn for t in g.tasks)]
        groups.sort(key=lambda g: min(turn[t.uid] for t in g.tasks if t.uid in turn))
        for group in groups:
            gradients = handle.hypernode_gradients(job, group, hn)
            if gradients is None:
                continue  # placed with the rest
            members = {t.uid for t in group.tasks}
            line = left.take_out(lambda t: t.uid in members)
            _place_group(handle, trial, line, job, queue, group, gradients, place_tasks)
    place_tasks(handle, trial, left, job, queue, within=None if hn is None else hn.mask)


def _place_group(handle: ActionHandle, trial: "Statement", line: FixedLine[TaskInfo], job: JobInfo,
                 queue: QueueInfo, group: SubGroup, gradients: list[list[HyperNode]], place_tasks: PlaceTasks) -> None:
    """The sub-group's pending tasks (`line`) in the first HyperNode of the best gradient that
    takes at least subGroupSize of its pods, or nowhere, each of its tasks saying why."""
    need = min(group.policy.size, len(group.tasks))
    last: HyperNode | None = None
    for gradient in gradients:
        for hn in _search_order(handle, job, gradient, group):
            for task in group.tasks:
                job.fit_errors.pop(task.uid, None)
            sub, left = handle.statement(), line.copy()
            while left and not any(t.uid in job.fit_errors for t in group.tasks):
                place_tasks(handle, sub, left, job, queue, within=hn.mask)  # it stops early once the job is ready
            if sum(1 for t in group.tasks if t.status in PLACED) >= need:
                trial.merge(sub)
                return
            sub.discard()
            last = hn
    spec = group.policy.network_topology
    assert spec is not None
    why = f"subGroup {group.key}: {_limit(spec)}: fits in no HyperNode within the allowed tiers"
    for task in line:
        handle.forget_placement(task)
        detail = job.fit_errors.get(task.uid)
        job.fit_errors[task.uid] = f"{why}; in HyperNode {last.name} (tier {last.tier}): {detail}" if (
            detail and last is not None) else why


def _searches_groups(handle: ActionHandle, job: JobInfo) -> bool:
    """Does a plugin search HyperNodes for one of the job's sub-groups?"""
    if not any(p.network_topology is not None and p.network_topology.hard for p in job.sub_group_policies):
        return False
    return any(handle.hypernode_gradients(job, group) is not None
               for group in sub_groups(job.sub_group_policies, job.tasks.values()).values())


def _enough_groups(job: JobInfo) -> bool:
    """Every policy with minSubGroups has that many sub-groups placed (Volcano's CheckSubJobReady)."""
    if not any(p.min_groups for p in job.sub_group_policies):
        return True
    placed: dict[str, int] = {}
    for group in sub_groups(job.sub_group_policies, job.tasks.values()).values():
        if sum(1 for t in group.tasks if t.status in PLACED) >= group.policy.size:
            placed[group.policy.name] = placed.get(group.policy.name, 0) + 1
    return all(placed.get(p.name, 0) >= p.min_groups for p in job.sub_group_policies)


def _search_order(handle: ActionHandle, job: JobInfo, gradient: Sequence[HyperNode | None],
                  group: SubGroup | None = None) -> list[HyperNode | None]:
    """The gradient's HyperNodes best first: by each one's own score, then, among equals, by
    their scores as a group (where plugins break ties, e.g. by the job's tasks already inside)."""
    if list(gradient) == [None]:
        return [None]
    hypernodes = [hn for hn in gradient if hn is not None]
    own = np.array([handle.hypernode_order(job, [hn], group)[0] for hn in hypernodes])
    order: list[HyperNode | None] = []
    for value in sorted(set(own.tolist()), reverse=True):
        tied = [hn for hn, score in zip(hypernodes, own) if score == value]
        if len(tied) > 1:
            tied = [tied[i] for i in np.argsort(-handle.hypernode_order(job, tied, group), kind="stable")]
        order.extend(tied)
    return order


def _gradients(handle: ActionHandle, job: JobInfo) -> list[list[HyperNode]] | None:
    if job.network_topology is None:
        return None
    # the first plugin that answers decides (Volcano's HyperNodeGradientForJobFn)
    return handle.hypernode_gradients(job)


def _limit(spec: NetworkTopology) -> str:
    bound = (f"highestTierName {spec.highest_tier_name}" if spec.highest_tier_name and spec.highest_tier is None
             else f"highestTierAllowed {spec.highest_tier}")
    return f"network topology {spec.mode} ({bound})" if spec.hard else "network topology soft"


def _explain(handle: ActionHandle, job: JobInfo, last: "HyperNode | None") -> None:
    """Why-pending for a gang no allowed HyperNode holds (for a job without a network
    topology of its own, its sub-groups' and tasks' reasons stand)."""
    spec = job.network_topology
    if spec is None:
        for task in job.tasks.values():
            if task.status == TaskStatus.PENDING:
                handle.forget_placement(task)
                job.fit_errors.setdefault(task.uid, "the gang is not ready without its sub-groups")
        return
    limit = _limit(spec)
    if last is None:
        need = ", ".join(f"{name} {format_value(name, value)}" for name, value in sorted((job.min_resources or {}).items()))
        why = f"{limit}: no HyperNode within the allowed tiers has the gang's minResources free ({need or 'none'})"
    else:
        why = f"{limit}: the gang fits in no HyperNode within the allowed tiers"
    errors = job.fit_errors
    job.fit_errors = {}
    for task in job.tasks.values():
        if task.status == TaskStatus.PENDING:
            handle.forget_placement(task)  # the trials were discarded, not placements
            detail = errors.get(task.uid)
            job.fit_errors[task.uid] = f"{why}; in HyperNode {last.name} (tier {last.tier}): {detail}" if (
                detail and last is not None) else why
