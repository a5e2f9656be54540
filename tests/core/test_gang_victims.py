"""The whole-gang victim choice of gangpreempt and gangreclaim (`central.actions.gangs`):
surplus tasks, the cheapest sets, the greedy fallback, and the actions' arguments
(Volcano's TestParseArguments and TestCreateJobBundles, translated)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from central.actions import gangs
from central.actions.gangs import Unit, cheapest_sets, consistent, domains, greedy_set, set_cost, settings_of, surplus_tasks
from central.errors import InputError
from central.model.objects import JobInfo, TaskInfo
from central.model.topology import HyperNode
from central.scheduler import load_config


def job(uid: str, *, priority: int = 0, min_available: int = 1, ready: int = 1,
        task_min: dict[str, int] | None = None, role_ready: dict[str, int] | None = None) -> JobInfo:
    info = JobInfo(uid=uid, name=uid, namespace="ns", queue="q", priority=priority, min_available=min_available,
                   task_min_available=task_min or {}, min_resources=None, phase="Running", creation="")
    info.ready = ready
    info.role_ready = role_ready or {}
    return info


def _task(name: str, role: str) -> TaskInfo:
    """A task with only the fields the choice reads (uid, role)."""
    t = object.__new__(TaskInfo)
    object.__setattr__(t, "uid", name)
    object.__setattr__(t, "role", role)
    return t


def unit(owner: JobInfo, pods: int, cpu: float, *, whole: bool = True, order: int = 0) -> Unit:
    tasks = tuple(_task(f"{owner.uid}-{i}", "") for i in range(pods))
    return Unit(owner, tasks, whole, np.array([cpu]), order)


def test_surplus_is_what_the_gang_can_spare():
    # Volcano's TestCreateJobBundles_SafeAndWhole: 3 ready, minAvailable 2 -> one safe task
    local = [_task(f"t{i}", "") for i in range(3)]
    assert [t.uid for t in surplus_tasks(job("j", min_available=2, ready=3), local)] == ["t0"]


def test_a_job_below_min_available_spares_nothing():
    # where Volcano puts every task in the safe bundle (already broken), Caldera offers the whole gang only
    assert surplus_tasks(job("j", min_available=3, ready=2), [_task("t0", "")]) == []


def test_surplus_respects_each_roles_min_task_member():
    # Volcano's role surplus: workers at their minimum, the one spare ps may go
    owner = job("j", min_available=3, ready=5, task_min={"worker": 2, "ps": 1}, role_ready={"worker": 2, "ps": 3})
    local = [_task("w0", "worker"), _task("p0", "ps"), _task("p1", "ps"), _task("w1", "worker")]
    assert [t.uid for t in surplus_tasks(owner, local)] == ["p0", "p1"]


def test_roles_are_not_enforced_below_their_sum():
    # Volcano's TestCreateJobBundles_NoTaskMinAvailable...: minAvailable under the roles' sum bypasses them
    owner = job("j", min_available=1, ready=3, task_min={"worker": 3}, role_ready={"worker": 3})
    assert len(surplus_tasks(owner, [_task("w0", "worker"), _task("w1", "worker")])) == 2


def brute_force(units: list[Unit], need: float, base: float) -> tuple[int, int] | None:
    best = None
    for k in range(1, len(units) + 1):
        for combo in itertools.combinations(units, k):
            if consistent(combo) and base + sum(float(u.freed[0]) for u in combo) + gangs.EPSILON > need:
                cost = set_cost(combo)
                best = cost if best is None or cost < best else best
    return best


@pytest.mark.parametrize("seed", range(20))
def test_the_first_set_is_the_cheapest(seed):
    rng = np.random.default_rng(seed)
    jobs = [job(f"j{i}", priority=int(rng.integers(0, 4))) for i in range(7)]
    units = [unit(j, int(rng.integers(1, 5)), float(rng.integers(1, 8)), order=i) for i, j in enumerate(jobs)]
    units.sort(key=lambda u: (u.cost, u.order))
    need = float(rng.integers(2, 20))
    first = next(cheapest_sets(units, np.array([need]), np.array([0.0])), None)
    expected = brute_force(units, need, 0.0)
    assert (None if first is None else set_cost(first)) == expected


def test_sets_come_cheapest_first():
    a, b, c = job("a", priority=1), job("b", priority=5), job("c", priority=0)
    units = sorted([unit(a, 4, 4), unit(b, 1, 4), unit(c, 1, 2)], key=lambda u: (u.cost, u.order))
    costs = [set_cost(s) for s in cheapest_sets(units, np.array([4.0]), np.array([0.0]))]
    assert costs == sorted(costs)
    assert costs[0] == (1, 5)  # b's one pod, not a's four (lower priority) pods


def test_one_job_is_not_taken_both_whole_and_by_surplus():
    owner = job("j", min_available=1, ready=2)
    spare = Unit(owner, (_task("j-0", ""),), False, np.array([2.0]), 0)
    whole = Unit(owner, (_task("j-0", ""), _task("j-1", "")), True, np.array([4.0]), 0)
    assert not consistent([spare, whole])
    sets = list(cheapest_sets([spare, whole], np.array([4.0]), np.array([0.0])))
    assert [[u.whole for u in s] for s in sets] == [[True]]


def test_past_the_limit_a_greedy_set_is_tried(monkeypatch):
    monkeypatch.setattr(gangs, "MAX_SETS", 3)
    units = [unit(job(f"j{i}"), 1, 1.0, order=i) for i in range(10)]
    sets = list(cheapest_sets(units, np.array([6.0]), np.array([0.0])))
    assert len(sets) == 1 and sum(len(u.tasks) for u in sets[0]) == 6


def test_greedy_drops_what_it_can_do_without():
    units = [unit(job("small"), 1, 1.0), unit(job("big"), 4, 8.0)]
    chosen = greedy_set(units, np.array([8.0]), np.array([0.0]))
    assert [u.job.uid for u in chosen] == ["big"]


def conf(arguments: str) -> str:
    return ('actions: "enqueue, allocate, gangpreempt, gangreclaim"\n'
            "tiers:\n- plugins: [{name: priority}, {name: gang}]\n"
            f"configurations:\n- name: gangpreempt\n  arguments: {arguments}\n")


def test_arguments_are_read():
    # Volcano's TestParseArguments
    loaded = load_config(conf("{maxDomains: 3, allowWholeBundle: 'false'}"), "c")
    assert settings_of(loaded.action_settings("gangpreempt")) == (3, False)
    assert settings_of(loaded.action_settings("gangreclaim")) == (8, True)


def test_zero_max_domains_means_the_default():
    # Volcano's TestParseArguments_InvalidMaxDomainsFallsBackToDefault (zero)
    assert settings_of(load_config(conf("{maxDomains: 0}"), "c").action_settings("gangpreempt"))[0] == 8


def test_a_negative_or_unknown_argument_is_refused():
    # Volcano falls back to the default for a negative maxDomains; Caldera names the key
    with pytest.raises(InputError, match="maxDomains"):
        load_config(conf("{maxDomains: -1}"), "c")
    with pytest.raises(InputError, match="maxDomain"):
        load_config(conf("{maxDomain: 2}"), "c")


class Gradients:
    """A handle that answers only `eviction_gradients`."""

    def __init__(self, answer):
        self.eviction_gradients = lambda job: answer


def hn(name: str, tier: int = 1) -> HyperNode:
    return HyperNode(name, tier, "", np.zeros(1, dtype=bool))


def test_domains_are_deduplicated_and_capped():
    # Volcano's TestPickDomainsFromGradients_MaxDomainsAndDedup
    d1, d2, d3 = hn("d1"), hn("d2"), hn("d3")
    picked = domains(Gradients([[d1, d2], [d2, d3]]), job("j"), 2)  # type: ignore[arg-type]
    assert [d.name for d in picked if d is not None] == ["d1", "d2"]


def test_without_a_bound_the_domain_is_the_whole_cluster():
    # Volcano's TestPickDomainsFromGradients_Fallback (a job without a hard topology)
    assert domains(Gradients(None), job("j"), 8) == [None]  # type: ignore[arg-type]
    assert domains(Gradients([]), job("j"), 8) == []  # type: ignore[arg-type]
