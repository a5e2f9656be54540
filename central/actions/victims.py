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
ones. Where gang votes at the point (Preemptable or Reclaimable, as Volcano's defaults
have it), victims from other jobs never take a job below its minAvailable whatever the
tiers decided: a later tier (drf) could otherwise strand a partial gang after gang's veto
ended the first tier. This guard is Caldera's, deliberately; a configuration that turns
gang's vote off gets Volcano's rules alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cmp_to_key

import numpy as np

from central.framework.ordering import PriorityQueue
from central.framework.session import Session
from central.framework.statement import Statement
from central.model.objects import JobInfo, TaskInfo, TaskStatus
from central.plugins.gang import keep_gangs

VictimFilter = Callable[[TaskInfo], bool]


def make_room(ssn: Session, stmt: Statement, task: TaskInfo, eligible: VictimFilter, point: str,
              reason: str, may_place: Callable[[], bool], may_evict: VictimFilter = lambda v: True) -> bool:
    """Try the candidate nodes in order; True once the task is pipelined onto one. `point` is
    the vote that picks victims: "preemptable" or "reclaimable".

    `may_evict` is asked again right before each eviction, after the earlier ones took effect.
    """
    placement = ssn.placement
    less = ssn.victim_less(task)
    for row, victims in allowed_victims(ssn, task, eligible, point):
        sub = ssn.statement()
        queue = PriorityQueue(less, victims)
        while queue and not (may_place() and placement.fits(task, row)):
            victim = queue.pop()
            if may_evict(victim):
                sub.evict(victim, reason)
        if may_place() and placement.fits(task, row):
            sub.pipeline(task, ssn.nodes[row])
            stmt.merge(sub)
            return True
        sub.discard()
    return False


def allowed_victims(ssn: Session, task: TaskInfo, eligible: VictimFilter, point: str) -> Iterator[tuple[int, list[TaskInfo]]]:
    """Per candidate node, best score first: (row, the victims the plugins allow there),
    skipping nodes where even all of them would not free the request and a pod slot."""
    placement = ssn.placement
    guard = ssn.points.takes_part(point, "gang")
    less = ssn.victim_less(task)
    order = cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))
    for row in placement.preemption_candidates(task):
        candidates = [t for t in ssn.nodes[row].tasks.values() if eligible(t)]
        # Cheap bound before sorting and voting: even every candidate the gang guard could
        # allow would not make room -> next node.
        if not candidates or not placement.room_after(task, row, *_at_most(ssn, task, candidates, guard)):
            continue
        victims = ssn.points.victims(point, task, sorted(candidates, key=order))
        if guard:
            victims = [v for v in victims if v.job_uid == task.job_uid] + keep_gangs(
                ssn.jobs, [v for v in victims if v.job_uid != task.job_uid])
        if victims and placement.room_after(task, row, np.sum([v.resreq for v in victims], axis=0), len(victims)):
            yield int(row), victims


def _at_most(ssn: Session, task: TaskInfo, candidates: list[TaskInfo], guard: bool) -> tuple[np.ndarray, int]:
    """What evicting every candidate (under the gang guard: of a job with room above
    minAvailable) would free: (resources, pod slots)."""
    freed, pods = ssn.dims.zeros(), 0
    for victim in candidates:
        job = ssn.jobs[victim.job_uid]
        if not guard or victim.job_uid == task.job_uid or job.ready_num > job.min_available:
            freed += victim.resreq
            pods += 1
    return freed, pods


def starving_jobs(ssn: Session) -> list[JobInfo]:
    """Admitted, valid jobs that want more than they have (JobStarving): preemptors."""
    return [job for job in ssn.jobs.values()
            if not job.pending_phase and not ssn.job_valid(job) and ssn.job_starving(job)]


def pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(ssn.task_less, (t for t in job.tasks.values() if t.status == TaskStatus.PENDING))
