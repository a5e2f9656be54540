"""Topology-aware preemption (preempt's `enableTopologyAwarePreemption`), as kube-scheduler
preempts and Volcano's preempt does in this mode.

For up to N candidate nodes (best score first; N is `minCandidateNodesPercentage` (10) of the
candidates, at least `minCandidateNodesAbsolute` (1), at most `maxCandidateNodesAbsolute`
(100)), a dry run evicts the allowed victims in victim order until the preemptor passes the
whole filter chain there, then reprieves them, highest priority first: a victim whose return
still leaves the preemptor fitting stays. So a node is freed of what actually blocks the
preemptor (an anti-affinity peer, a GPU holder), not of whatever comes first in victim order.

Of the candidates, the node kept has the lowest highest-priority victim, then the lowest sum
of victim priorities, then the fewest victims, then the latest creation among its highest-
priority victims, then the best score. Volcano starts at a random offset among the nodes and
checks them in parallel; a fixed order keeps dry runs reproducible. PodDisruptionBudgets are
not counted (Caldera has none to count).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from central.actions.victims import VictimFilter, allowed_victims, sort_key
from central.framework.action import ActionHandle
from central.framework.statement import Statement
from central.model.objects import TaskInfo


def topology_aware_room(handle: ActionHandle, stmt: Statement, task: TaskInfo, eligible: VictimFilter,
                        arguments: Mapping[str, Any], reason: str, may_place: Callable[[], bool]) -> bool:
    """Evict the chosen node's victims and pipeline the task there; True on success."""
    rows = handle.placement.preemption_candidates(task)
    wanted = _candidate_count(len(rows), arguments)
    found: list[tuple[int, list[TaskInfo]]] = []
    less = handle.victim_less(task)
    order = sort_key(less)
    for row, allowed in allowed_victims(handle, task, eligible, "preemptable"):
        victims = _select_victims(handle, task, row, sorted(allowed, key=order), may_place)
        if victims:
            found.append((row, victims))
            if len(found) >= wanted:
                break
    if not found:
        return False
    row, victims = min(found, key=lambda c: _rank(c[1]))  # min() keeps the first of equals
    sub = handle.statement()
    for victim in victims:
        sub.evict(victim, reason)
    sub.pipeline(task, handle.nodes[row])
    stmt.merge(sub)
    return True


def _select_victims(handle: ActionHandle, task: TaskInfo, row: int, allowed: list[TaskInfo],
                    may_place: Callable[[], bool]) -> list[TaskInfo]:
    """The fewest victims on the node, highest priority first; [] if the task cannot fit."""
    potential: list[TaskInfo] = []
    for victim in allowed:
        potential.append(victim)
        if _fits_without(handle, task, row, potential, may_place):
            break
    else:
        if not potential or not _fits_without(handle, task, row, potential, may_place):
            return []
    victims: list[TaskInfo] = []
    reprieved: list[TaskInfo] = []
    for victim in reversed(potential):  # potential runs lowest priority first
        gone = [v for v in potential if v is not victim and v not in reprieved]
        if _fits_without(handle, task, row, gone, may_place):
            reprieved.append(victim)
        else:
            victims.append(victim)
    return victims


def _fits_without(handle: ActionHandle, task: TaskInfo, row: int, gone: list[TaskInfo], may_place: Callable[[], bool]) -> bool:
    """Would the task fit the node with `gone` evicted? Tried in a statement, then undone."""
    trial = handle.statement()
    for victim in gone:
        trial.evict(victim, "dry run")
    fits = may_place() and handle.placement.fits(task, row)
    trial.discard()
    return fits


def _rank(victims: list[TaskInfo]) -> tuple[int, int, int, tuple[int, ...]]:
    top = max(v.priority for v in victims)
    return (top, sum(v.priority for v in victims), len(victims),
            _negated(min(v.creation for v in victims if v.priority == top)))


def _negated(text: str) -> tuple[int, ...]:
    """A sort key under which a later timestamp comes first."""
    return tuple(-ord(c) for c in text)


def _candidate_count(nodes: int, arguments: Mapping[str, Any]) -> int:
    n = nodes * int(arguments.get("minCandidateNodesPercentage", 10)) // 100
    n = max(n, int(arguments.get("minCandidateNodesAbsolute", 1)))
    n = min(n, int(arguments.get("maxCandidateNodesAbsolute", 100)))
    return min(n, nodes)
