"""allocate, for jobs with a network topology: place the gang inside one HyperNode.

Volcano's allocateForJob, for a job without subgroups:
1. Ask the plugins for the HyperNode gradients of the job (`hypernode_gradients`: lists of
   HyperNodes, lowest tier first). No plugin answers: the job is placed like any other.
2. Gradient by gradient, try the gang in each of its HyperNodes on a trial statement that
   is discarded at once: the job's tasks in task order, on the HyperNode's nodes only. A
   HyperNode where the job ends ready (or pipelined) is a solution.
3. The first gradient with a solution decides: the solution with the highest
   `hypernode_order` score (ties: the first in name order; Volcano takes whichever its map
   yields first) is placed again, for real, on the caller's statement. Placement is
   deterministic, so the replay lands exactly where the trial did.
4. No gradient has a solution: the job waits, and every pending task says why, naming
   the mode and the highest tier allowed and what the last HyperNode tried lacked.
Subgroups (`subGroupPolicy`, Volcano's subjobs) are not searched separately here: a job is
one gang in one HyperNode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from central.api.resources import format_value
from central.framework.ordering import FixedLine
from central.model.objects import JobInfo, QueueInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.session import Session
    from central.framework.statement import Statement
    from central.model.topology import HyperNode

PlaceTasks = Callable[..., None]  # allocate.place_tasks(ssn, stmt, tasks, job, queue, within=mask)


def place_in_hypernodes(ssn: "Session", stmt: "Statement", tasks: FixedLine[TaskInfo],
                        job: JobInfo, queue: QueueInfo, place_tasks: PlaceTasks) -> bool:
    """Place the job by HyperNode onto `stmt` with allocate's `place_tasks`; False when no
    plugin searches HyperNodes for it."""
    gradients = _gradients(ssn, job)
    if gradients is None:
        return False
    last: HyperNode | None = None
    for gradient in gradients:
        solutions = []
        for hn in gradient:
            job.fit_errors = {}
            trial = ssn.statement()
            place_tasks(ssn, trial, tasks.copy(), job, queue, within=hn.mask)
            if trial.ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                solutions.append(hn)
            trial.discard()
            last = hn
        if solutions:
            best = solutions[int(np.argmax(_scores(ssn, job, solutions)))]
            job.fit_errors = {}
            place_tasks(ssn, stmt, tasks, job, queue, within=best.mask)
            return True
    _explain(ssn, job, last)
    while tasks:  # tried as a whole: nothing of the job is left to try this round
        tasks.pop()
    return True


def _gradients(ssn: "Session", job: JobInfo) -> list[list["HyperNode"]] | None:
    if job.network_topology is None:
        return None
    # the first plugin that answers decides (Volcano's HyperNodeGradientForJobFn)
    return ssn.points.first_failure("hypernode_gradients", job)


def _scores(ssn: "Session", job: JobInfo, candidates: list["HyperNode"]) -> np.ndarray:
    total = np.zeros(len(candidates))
    for fn in ssn.points.flat["hypernode_order"]:
        total += fn(job, candidates)
    return total


def _explain(ssn: "Session", job: JobInfo, last: "HyperNode | None") -> None:
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
            ssn.last_transaction.pop(task.uid, None)  # the trials were discarded, not placements
            detail = errors.get(task.uid)
            job.fit_errors[task.uid] = f"{why}; in HyperNode {last.name} (tier {last.tier}): {detail}" if (
                detail and last is not None) else why
