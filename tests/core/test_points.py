"""How plugin answers combine, point by point, as Volcano's session combines them across
tiers: votes, orderings, AND and OR points, and victim selection."""

import pytest

from central.framework.plugin import ABSTAIN, PERMIT, REJECT
from central.framework.points import Points, all_true, any_true, first_opinion, first_tier_all, victims, vote
from tests.core.plugins import plugin


def const(value):
    return lambda *args: value


@pytest.mark.parametrize("tiers, expected", [
    pytest.param([[const(PERMIT)]], True, id="permit"),
    pytest.param([[const(ABSTAIN)]], True, id="all-abstain-passes"),
    pytest.param([[const(PERMIT), const(REJECT)]], False, id="any-reject-fails"),
    pytest.param([[const(PERMIT)], [const(REJECT)]], True, id="first-tier-permit-decides"),
    pytest.param([[const(ABSTAIN)], [const(REJECT)]], False, id="abstaining-tier-passes-on"),
])
def test_vote(tiers, expected):
    points = Points([[plugin(f"p{i}{j}", job_pipelined=fn) for j, fn in enumerate(t)] for i, t in enumerate(tiers)])
    assert vote(points.job_pipelined, object()) is expected


def test_orderings_take_the_first_opinion():
    points = Points([[plugin("a", job_order=const(0)), plugin("b", job_order=const(1))], [plugin("c", job_order=const(-1))]])
    assert first_opinion(points.job_order, 1, 2) == 1


def test_disabled_flags_leave_a_plugin_out():
    points = Points([[plugin("a", {"enableJobOrder": False}, job_order=const(-1)), plugin("b", job_order=const(1))]])
    assert first_opinion(points.job_order, 1, 2) == 1


def test_starving_is_and_within_the_first_answering_tier_else_false():
    def starving(tiers):
        return first_tier_all(Points(tiers).job_starving, 0)

    assert starving([[], [plugin("a", job_starving=const(True)), plugin("b", job_starving=const(False))]]) is False
    assert starving([[plugin("a", job_starving=const(True))], [plugin("b", job_starving=const(False))]]) is True
    assert starving([[]]) is False


def test_overused_is_or_and_ready_is_and():
    points = Points([[plugin("a", overused=const(False), job_ready=const(True)),
                      plugin("b", overused=const(True), job_ready=const(False))]])
    assert any_true(points.overused, 0) is True
    assert all_true(points.job_ready, 0) is False
    assert all_true(Points([[]]).job_ready, 0) is True


@pytest.mark.parametrize("answers, expected", [
    pytest.param([[None, [1, 2, 3]]], [1, 2, 3], id="abstainer-skipped"),
    pytest.param([[[1, 2, 3], [2, 3, 4]]], [2, 3], id="intersection"),
    pytest.param([[[1, 2], []], [[3]]], [3], id="empty-ends-the-tier"),
    pytest.param([[None], [[5]]], [5], id="first-tier-with-answer"),
    pytest.param([[None]], [], id="nobody-answers"),
])
def test_victims(answers, expected):
    tiers = [[plugin(f"p{i}{j}", preemptable=const(a)) for j, a in enumerate(t)] for i, t in enumerate(answers)]
    assert victims(Points(tiers).preemptable, None, [1, 2, 3, 4, 5]) == expected
