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
Subgroups (`subGroupPolicy`, Volcano's subjobs) are not searched separately here: a job is
one gang in one HyperNode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from central.framework.ordering import FixedLine
from central.model.objects import JobInfo, QueueInfo, TaskInfo, TaskStatus
from central.resources.vectors import format_value

if TYPE_CHECKING:
    from central.framework.action import ActionHandle
    from central.framework.statement import Statement
    from central.model.topology import HyperNode

PlaceTasks = Callable[..., None]  # allocate.place_tasks(handle, stmt, tasks, job, queue, within=mask)


def place_in_hypernodes(handle: ActionHandle, stmt: "Statement", tasks: FixedLine[TaskInfo],
                        job: JobInfo, queue: QueueInfo, place_tasks: PlaceTasks) -> bool:
    """Place the job by HyperNode onto `stmt` with allocate's `place_tasks`; False when no
    plugin searches HyperNodes for it."""
    gradients = _gradients(handle, job)
    if gradients is None:
        return False
    last: HyperNode | None = None
    for gradient in gradients:
        for hn in _search_order(handle, job, gradient):
            job.fit_errors = {}
            trial, left = handle.statement(), tasks.copy()
            place_tasks(handle, trial, left, job, queue, within=hn.mask)
            if trial.ops and (handle.job_ready(job) or handle.job_pipelined(job)):
                stmt.merge(trial)
                tasks.assign(left)  # what the trial left to place, in the same order
                return True
            trial.discard()
            last = hn
    _explain(handle, job, last)
    tasks.clear()  # tried as a whole: nothing of the job is left to try this round
    return True


def _search_order(handle: ActionHandle, job: JobInfo, gradient: list["HyperNode"]) -> list["HyperNode"]:
    """The gradient's HyperNodes best first: by each one's own score, then, among equals, by
    their scores as a group (where plugins break ties, e.g. by the job's tasks already inside)."""
    own = np.array([_scores(handle, job, [hn])[0] for hn in gradient])
    order: list[HyperNode] = []
    for value in sorted(set(own.tolist()), reverse=True):
        group = [hn for hn, score in zip(gradient, own) if score == value]
        if len(group) > 1:
            group = [group[i] for i in np.argsort(-_scores(handle, job, group), kind="stable")]
        order.extend(group)
    return order


def _gradients(handle: ActionHandle, job: JobInfo) -> list[list["HyperNode"]] | None:
    if job.network_topology is None:
        return None
    # the first plugin that answers decides (Volcano's HyperNodeGradientForJobFn)
    return handle.hypernode_gradients(job)


def _scores(handle: ActionHandle, job: JobInfo, candidates: list[HyperNode]) -> np.ndarray:
    return handle.hypernode_order(job, candidates)


def _explain(handle: ActionHandle, job: JobInfo, last: "HyperNode | None") -> None:
    """Why-pending for a gang no allowed HyperNode holds."""
    spec = job.network_topology
    assert spec is not None
    bound = (f"highestTierName {spec.highest_tier_name}" if spec.highest_tier_name and spec.highest_tier is None
             else f"highestTierAllowed {spec.highest_tier}")
    limit = f"network topology {spec.mode} ({bound})" if spec.hard else "network topology soft"
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
