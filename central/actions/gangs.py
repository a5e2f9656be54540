"""What gangpreempt and gangreclaim share: whole gangs as victims, the fewest pods evicted.

For one starving job (the preemptor), in one statement:
1. Domains. With a hard network topology that a plugin bounds (`eviction_gradients`:
   HyperNodes of the allowed tiers whose allocatable covers minResources, widest tier
   first), at most `maxDomains` of them; otherwise the whole cluster. Victims and the nodes
   the preemptor lands on lie in one domain. Every domain is searched, and the cheapest
   solution wins, a tie going to the lower tier (the tighter domain), then to the plugins'
   order. Volcano takes the first domain, in that order, where its choice works.
2. Victim units in a domain. Of each victim job (`eligible` says which tasks the action may
   take), either one of its surplus tasks (ready above minAvailable and above its role's
   minTaskMember: evicting it leaves the gang running, Volcano's "safe bundle"), or the
   whole gang: every placed task of the job, all of them inside the domain and all
   evictable (Volcano's "whole bundle" evicts only the job's tasks on the domain's nodes,
   leaving the rest of a broken gang running). A job already below minAvailable offers
   only its whole gang. The plugins vote on a unit's tasks as in preempt/reclaim, less the
   votes that only keep gangs at minAvailable (`Plugin.keeps_gangs`); a unit with a task
   they refuse is no candidate.
3. The choice. Sets of units in order of cost, (evicted pods, then the highest victim
   job priority): the first whose freed resources, with the domain's future idle, cover
   what the preemptor lacks, and that the plugins allow as a whole, is tried: its victims
   evicted and the preemptor's pending tasks (TaskOrder; up to minAvailable, or all of them
   for a job already ready) pipelined inside the domain, on a trial statement. The first
   trial that leaves the job pipelined is the domain's solution. Volcano instead takes
   bundles in its own order (safe before whole, then victim job order, then how much of
   the need a bundle covers per resource it holds) and stops at the first prefix that
   covers the need: it can evict a 10-pod gang where one pod of another would do.
4. Commit only if the job is then pipelined; otherwise the statement is discarded and
   nothing is evicted.
A job whose sub-groups have a hard network topology of their own is left alone (see
`searched_groups`). The search is exact up to `MAX_SETS` sets per domain (the cheapest
first), and tries at most `MAX_TRIALS` placements; past that, a greedy choice (most needed
room per pod, then redundant units dropped) is tried once.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from central.actions.victims import pending_tasks, sort_key
from central.framework.action import ActionHandle
from central.framework.statement import Statement
from central.model.annotations import PREEMPTABLE
from central.model.nodetable import column_sums
from central.model.objects import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo, TaskStatus
from central.model.topology import HyperNode
from central.resources.vectors import EPSILON

MAX_SETS = 4096  # sets of units looked at per domain before the greedy fallback
MAX_TRIALS = 8  # placements tried per domain
DEFAULT_MAX_DOMAINS = 8  # Volcano's default maxDomains
ARGUMENTS = {"maxDomains": int, "allowWholeBundle": bool}

TaskFilter = Callable[[TaskInfo], bool]


@dataclass(frozen=True)
class Unit:
    """What evicting goes by: one surplus task, or a whole gang."""

    job: JobInfo
    tasks: tuple[TaskInfo, ...]
    whole: bool
    freed: np.ndarray  # what it frees on the domain's nodes
    order: int  # the victim order of its least important task (least important first)

    @property
    def cost(self) -> tuple[int, int]:
        return len(self.tasks), self.job.priority


@dataclass(frozen=True)
class Choice:
    domain: HyperNode | None  # None: the whole cluster
    units: tuple[Unit, ...]

    @property
    def cost(self) -> tuple[int, int]:
        return set_cost(self.units)

    @property
    def victims(self) -> list[TaskInfo]:
        return [t for u in self.units for t in u.tasks]


def set_cost(units: Sequence[Unit]) -> tuple[int, int]:
    """(evicted pods, the highest victim job priority): lower is cheaper."""
    return sum(len(u.tasks) for u in units), max((u.job.priority for u in units), default=-(2**31))


def settings_of(raw: Any) -> tuple[int, bool]:
    """(maxDomains, allowWholeBundle); maxDomains 0 means Volcano's default."""
    return (int(raw.get("maxDomains") or DEFAULT_MAX_DOMAINS), bool(raw.get("allowWholeBundle", True)))


def job_preemptable(job: JobInfo) -> bool:
    """Volcano's IsJobPreemptableForGangEviction: a PodGroup's volcano.sh/preemptable, when
    set, decides; unset, the job may be a victim."""
    return PREEMPTABLE not in job.annotations or job.preemptable


def evict_for(handle: ActionHandle, stmt: Statement, job: JobInfo, queue: QueueInfo, point: str,
              eligible: TaskFilter, reason: str, settings: Any) -> bool:
    """Evict the cheapest whole-gang victims for `job` and pipeline it, on `stmt`; True if
    the job is then pipelined (the caller commits)."""
    max_domains, allow_whole = settings_of(settings)
    tasks = needed_tasks(handle, job)
    if not tasks or searched_groups(job):
        return False
    actor = tasks[0]
    best: tuple[tuple[int, int], int, int] | None = None
    found: Choice | None = None
    for position, domain in enumerate(domains(handle, job, max_domains)):
        choice = _cheapest(handle, job, queue, point, actor, tasks, eligible, reason, domain, allow_whole)
        if choice is None:
            continue
        rank = (choice.cost, 0 if domain is None else domain.tier, position)
        if best is None or rank < best:
            best, found = rank, choice
    return found is not None and _try(handle, stmt, job, queue, tasks, found, reason)


def searched_groups(job: JobInfo) -> bool:
    """Has the job sub-groups with a hard network topology of their own? Their placement
    (each sub-group in a HyperNode of its own) is allocate's; these actions leave such
    jobs alone rather than evict for a placement allocate would not make."""
    return any(p.network_topology is not None and p.network_topology.hard for p in job.sub_group_policies)


def needed_tasks(handle: ActionHandle, job: JobInfo) -> list[TaskInfo]:
    """The pending tasks the preemptor places, in TaskOrder (preemptionPolicy Never left out)."""
    line = pending_tasks(handle, job)
    out = []
    while line:
        task = line.pop()
        if not task.preempt_never:
            out.append(task)
    return out


def domains(handle: ActionHandle, job: JobInfo, max_domains: int) -> list[HyperNode | None]:
    """The candidate domains in the plugins' order (`eviction_gradients`), each once, at
    most `max_domains` (Volcano's PickDomainsFromGradients); no plugin bounding the job:
    the whole cluster (None)."""
    gradients = handle.eviction_gradients(job)
    if gradients is None:
        return [None]
    out: list[HyperNode | None] = []
    seen: set[str] = set()
    for gradient in gradients:
        for hn in gradient:
            if hn is not None and hn.name not in seen and len(out) < max_domains:
                seen.add(hn.name)
                out.append(hn)
    return out


def _cheapest(handle: ActionHandle, job: JobInfo, queue: QueueInfo, point: str, actor: TaskInfo,
              tasks: list[TaskInfo], eligible: TaskFilter, reason: str, domain: HyperNode | None,
              allow_whole: bool) -> Choice | None:
    """The domain's cheapest set of units after which the job is pipelined (tried on a
    trial statement, then discarded), or None."""
    mask = None if domain is None else domain.mask
    units = victim_units(handle, point, actor, job, eligible, mask, allow_whole)
    if not units:
        return None
    need = _need(handle, job, tasks)
    rows = np.arange(len(handle.nodes)) if mask is None else np.flatnonzero(mask[: len(handle.nodes)])
    base = column_sums(handle.placement.table.future[rows])
    trials = 0
    order = sort_key(handle.victim_less(actor))
    for chosen in cheapest_sets(units, need, base):
        victims = sorted((t for u in chosen for t in u.tasks), key=order)
        if len(handle.victims(point, actor, victims, whole_gangs=True)) != len(victims):
            continue  # allowed one by one, not together (a queue's share, a budget)
        choice = Choice(domain, tuple(chosen))
        trial = handle.statement()
        ok = _apply(handle, trial, job, queue, tasks, choice, reason)
        trial.discard()
        for task in tasks:
            handle.forget_placement(task)
        if ok:
            return choice
        trials += 1
        if trials >= MAX_TRIALS:
            break
    return None


def _try(handle: ActionHandle, stmt: Statement, job: JobInfo, queue: QueueInfo, tasks: list[TaskInfo],
         choice: Choice, reason: str) -> bool:
    sub = handle.statement()
    if _apply(handle, sub, job, queue, tasks, choice, reason):
        stmt.merge(sub)
        return True
    sub.discard()
    return False


def _apply(handle: ActionHandle, stmt: Statement, job: JobInfo, queue: QueueInfo, tasks: list[TaskInfo],
           choice: Choice, reason: str) -> bool:
    """Evict the choice's victims and pipeline the job inside its domain onto `stmt`."""
    for victim in choice.victims:
        stmt.evict(victim, reason)
    return place_gang(handle, stmt, job, queue, tasks, None if choice.domain is None else choice.domain.mask)


def place_gang(handle: ActionHandle, stmt: Statement, job: JobInfo, queue: QueueInfo, tasks: list[TaskInfo],
               mask: np.ndarray | None) -> bool:
    """Pipeline `tasks` in order (on the rows of `mask`, if given) until the job is
    pipelined; a job already ready needs every one of them. False once one fits nowhere."""
    placement = handle.placement
    every = handle.job_ready(job)
    for task in tasks:
        if not every and handle.job_pipelined(job):
            break
        if not handle.allocatable(queue, task).ok:
            return False
        rows = placement.feasible(task)
        if mask is not None:
            rows = rows[mask[rows]]
        if not len(rows):
            return False
        row, _ = placement.select(task, rows)
        stmt.pipeline(task, handle.nodes[row])
    return handle.job_pipelined(job)


def _need(handle: ActionHandle, job: JobInfo, tasks: list[TaskInfo]) -> np.ndarray:
    """What the tasks the job still lacks request: up to minAvailable, or all for a ready job."""
    lacking = len(tasks) if handle.job_ready(job) else max(
        1, job.min_available - job.ready_num - job.count(TaskStatus.PIPELINED))
    need = handle.dims.zeros()
    for task in tasks[:lacking]:
        need = need + task.resreq
    return need


def victim_units(handle: ActionHandle, point: str, actor: TaskInfo, preemptor: JobInfo, eligible: TaskFilter,
                 mask: np.ndarray | None, allow_whole: bool) -> list[Unit]:
    """The domain's victim units (surplus tasks, whole gangs) the plugins allow, cheapest first."""
    order = sort_key(handle.victim_less(actor))
    row_of = {node.name: row for row, node in enumerate(handle.nodes)}

    def inside(task: TaskInfo) -> bool:
        row = row_of.get(task.node or "")
        return row is not None and (mask is None or bool(mask[row]))

    by_job: dict[str, list[TaskInfo]] = {}
    rows = range(len(handle.nodes)) if mask is None else np.flatnonzero(mask[: len(handle.nodes)])
    for row in rows:
        for task in handle.nodes[row].tasks.values():
            if task.job_uid != preemptor.uid and task.job_uid in handle.jobs and eligible(task):
                by_job.setdefault(task.job_uid, []).append(task)
    candidates = sorted((t for ts in by_job.values() for t in ts), key=order)
    rank = {t.uid: i for i, t in enumerate(candidates)}
    units: list[Unit] = []
    for job_uid, local in by_job.items():
        job = handle.jobs[job_uid]
        local.sort(key=lambda t: rank[t.uid])
        for task in surplus_tasks(job, local):
            units.append(Unit(job, (task,), False, _freed(handle, [task], inside), rank[task.uid]))
        if allow_whole:
            placed = [t for t in job.tasks.values() if t.status in ALLOCATED_STATUSES]
            if placed and all(eligible(t) and inside(t) for t in placed):
                placed.sort(key=lambda t: rank.get(t.uid, len(rank)))
                units.append(Unit(job, tuple(placed), True, _freed(handle, placed, inside), rank[local[0].uid]))
    allowed = [u for u in units if len(handle.victims(point, actor, list(u.tasks), whole_gangs=True)) == len(u.tasks)]
    allowed.sort(key=lambda u: (u.cost, u.order, u.whole))
    return allowed


def surplus_tasks(job: JobInfo, local: list[TaskInfo]) -> list[TaskInfo]:
    """Of `local` (least important first), those that may go one by one, all of them
    together, and leave the job at or above minAvailable and each role at or above its
    minTaskMember (Volcano's safe bundle)."""
    spare = job.ready_num - job.min_available
    if spare <= 0:
        return []
    roles = job.task_min_available if job.min_available >= job.task_min_total else {}
    role_spare = {role: job.role_ready.get(role, 0) - minimum for role, minimum in roles.items()}
    out = []
    for task in local:
        if spare <= 0:
            break
        if task.role in role_spare:
            if role_spare[task.role] <= 0:
                continue
            role_spare[task.role] -= 1
        spare -= 1
        out.append(task)
    return out


def _freed(handle: ActionHandle, tasks: Sequence[TaskInfo], inside: TaskFilter) -> np.ndarray:
    freed = handle.dims.zeros()
    for task in tasks:
        if inside(task):
            freed = freed + task.resreq
    return freed


def covers(have: np.ndarray, need: np.ndarray) -> bool:
    wanted = need > EPSILON
    return bool(np.all(have[wanted] + EPSILON > need[wanted]))


def consistent(units: Sequence[Unit]) -> bool:
    """No job both whole and by surplus tasks (a job's surplus tasks are chosen to go together)."""
    whole = {u.job.uid for u in units if u.whole}
    return all(u.whole or u.job.uid not in whole for u in units)


def cheapest_sets(units: Sequence[Unit], need: np.ndarray, base: np.ndarray) -> Iterator[list[Unit]]:
    """Consistent sets of `units` (sorted by cost) whose freed resources with `base` cover
    `need`, cheapest first by (pods, highest priority): every subset is reached from one
    no dearer (add the next unit, or swap the last for the next), so a heap yields them in
    order; a set whose every extension cannot cover is not grown. Past MAX_SETS sets, one
    greedy set."""
    n = len(units)
    if n == 0:
        return
    suffix = np.zeros((n + 1, len(need)))
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + units[i].freed
    seq = 0
    heap: list[tuple[tuple[int, int], int, tuple[int, ...], np.ndarray]] = []

    def push(members: tuple[int, ...], freed_before_last: np.ndarray) -> None:
        nonlocal seq
        last = members[-1]
        if not covers(base + freed_before_last + suffix[last], need):
            return  # nothing grown from it covers
        seq += 1
        heapq.heappush(heap, (set_cost([units[i] for i in members]), seq, members, freed_before_last))

    push((0,), np.zeros(len(need)))
    popped = 0
    while heap and popped < MAX_SETS:
        _, _, members, before = heapq.heappop(heap)
        popped += 1
        last = members[-1]
        freed = before + units[last].freed
        chosen = [units[i] for i in members]
        if covers(base + freed, need) and consistent(chosen):
            yield chosen
        if last + 1 < n:
            push(members + (last + 1,), freed)
            push(members[:-1] + (last + 1,), before)
    if heap:
        greedy = greedy_set(units, need, base)
        if greedy:
            yield greedy


def greedy_set(units: Sequence[Unit], need: np.ndarray, base: np.ndarray) -> list[Unit]:
    """Units by most of the lacking room per evicted pod (then cheapest) until it is
    covered, then every unit the rest can do without dropped (biggest first)."""
    wanted = need > EPSILON
    scale = np.where(wanted, need, 1.0)
    chosen: list[Unit] = []
    have = base.copy()
    left = list(units)
    while not covers(have, need) and left:
        lacking = np.maximum(need - have, 0)
        best = max(left, key=lambda u: (float(np.sum(np.minimum(u.freed, lacking)[wanted] / scale[wanted])) / len(u.tasks),
                                        -len(u.tasks), -u.job.priority, -u.order))
        left.remove(best)
        if consistent(chosen + [best]):
            chosen.append(best)
            have = have + best.freed
    if not covers(have, need):
        return []
    for unit in sorted(chosen, key=lambda u: (-len(u.tasks), -u.job.priority)):
        if covers(have - unit.freed, need):
            chosen.remove(unit)
            have = have - unit.freed
    return chosen
