"""What preempt and reclaim share: evicting victims on one node to make room for a task.

The candidate nodes are those the filter chain does not call unresolvable (short resources,
a taken pod slot or GPU card, an anti-affinity peer all count as room evicting could make).
For each, best score first, the victims the plugins allow (Preemptable or Reclaimable,
per-tier intersection) are evicted in victim order inside a sub-statement, until the task
passes the whole chain on that node; then it is pipelined there and the sub-statement is
merged into the job's statement. A node where even every allowed victim would not free the
request and a pod slot is skipped before anything is evicted.

Candidates are offered to the plugins in victim order (least important first), so a plugin
that allows only some of them (gang keeps each job at minAvailable) keeps the important
ones. After the tiers voted, the VictimGuard plugins that take part in the vote have the
last word, whatever the tiers decided (gang: victims from other jobs never take a job below
its minAvailable); their cheap `may_lose` bounds the room a node could offer before any
vote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cmp_to_key
from typing import Any

import numpy as np

from central.framework.action import ActionHandle
from central.framework.ordering import PriorityQueue
from central.framework.statement import Statement
from central.model.objects import JobInfo, TaskInfo, TaskStatus

VictimFilter = Callable[[TaskInfo], bool]


def make_room(handle: ActionHandle, stmt: Statement, task: TaskInfo, eligible: VictimFilter, point: str,
              reason: str, may_place: Callable[[], bool], may_evict: VictimFilter = lambda v: True) -> bool:
    """Try the candidate nodes in order; True once the task is pipelined onto one. `point` is
    the vote that picks victims: "preemptable" or "reclaimable".

    `may_evict` is asked again right before each eviction, after the earlier ones took effect.
    """
    placement = handle.placement
    less = handle.victim_less(task)
    for row, victims in allowed_victims(handle, task, eligible, point):
        sub = handle.statement()
        queue = PriorityQueue(less, victims)
        while queue and not (may_place() and placement.fits(task, row)):
            victim = queue.pop()
            if may_evict(victim):
                sub.evict(victim, reason)
        if may_place() and placement.fits(task, row):
            sub.pipeline(task, handle.nodes[row])
            stmt.merge(sub)
            return True
        sub.discard()
    return False


def allowed_victims(handle: ActionHandle, task: TaskInfo, eligible: VictimFilter, point: str) -> Iterator[tuple[int, list[TaskInfo]]]:
    """Per candidate node, best score first: (row, the victims the plugins allow there),
    skipping nodes where even all of them would not free the request and a pod slot."""
    placement = handle.placement
    may_lose = handle.may_lose(point, task)
    less = handle.victim_less(task)
    order = sort_key(less)
    for row in placement.preemption_candidates(task):
        candidates = [t for t in handle.nodes[row].tasks.values() if eligible(t)]
        # Cheap bound before sorting and voting: even every candidate the guards could
        # allow would not make room -> next node.
        if not candidates or not placement.room_after(task, row, *_at_most(handle, candidates, may_lose)):
            continue
        victims = handle.victims(point, task, sorted(candidates, key=order))
        if victims and placement.room_after(task, row, np.sum([v.resreq for v in victims], axis=0), len(victims)):
            yield int(row), victims


def sort_key(less: Callable[[TaskInfo, TaskInfo], bool]) -> Callable[[TaskInfo], Any]:
    """A sort key that puts tasks in the order `less` says (equals keep their order)."""
    def compare(a: TaskInfo, b: TaskInfo) -> int:
        return -1 if less(a, b) else (1 if less(b, a) else 0)
    return cmp_to_key(compare)


def _at_most(handle: ActionHandle, candidates: list[TaskInfo], may_lose: VictimFilter) -> tuple[np.ndarray, int]:
    """What evicting every candidate the guards could allow would free: (resources, pod slots)."""
    freed, pods = handle.dims.zeros(), 0
    for victim in candidates:
        if may_lose(victim):
            freed += victim.resreq
            pods += 1
    return freed, pods


def starving_jobs(handle: ActionHandle) -> list[JobInfo]:
    """Admitted, valid jobs that want more than they have (JobStarving): preemptors."""
    return [job for job in handle.jobs.values()
            if not job.pending_phase and not handle.job_valid(job) and handle.job_starving(job)]


def pending_tasks(handle: ActionHandle, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """The job's pending tasks but the gated ones (the API server binds no gated pod)."""
    return PriorityQueue(handle.task_less, (t for t in job.tasks.values() if t.status == TaskStatus.PENDING and not t.gated))
