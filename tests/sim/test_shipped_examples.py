"""The shipped examples show what they say they show."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.sim.command import EXAMPLES
from central.sim.manifests import load_into, read_manifests
from central.sim.simulate import simulate

NOW = datetime(2026, 1, 5, tzinfo=timezone.utc)
PREEMPT_RECLAIM = EXAMPLES / "configs" / "preempt-reclaim.conf"


def _run(manifests: Path, cycles: int = 2):
    cache = ClusterCache()
    load_into(cache, read_manifests([str(manifests)]))
    return simulate(cache, load_config(PREEMPT_RECLAIM.read_text(), str(PREEMPT_RECLAIM)), cycles, NOW)


@pytest.mark.parametrize("conf", sorted(EXAMPLES.glob("configs/*.conf")), ids=lambda p: p.name)
def test_every_shipped_configuration_loads(conf: Path) -> None:
    assert load_config(conf.read_text(), str(conf)).actions


def test_the_preemption_example_preempts() -> None:
    result = _run(EXAMPLES / "preemption")
    assert list(result.eviction_reasons.values()) == [
        "PreemptionByScheduler: preempted to make room for analytics/exec-dashboard-0"]
    assert result.binds == {"analytics/exec-dashboard-0": "node-1"}


def test_the_reclaim_example_reclaims() -> None:
    result = _run(EXAMPLES / "reclaim")
    assert sorted(result.eviction_reasons.values()) == [
        f"PreemptionByScheduler: reclaimed by queue training for training/fine-tune-{i}" for i in (0, 1)]
    assert sorted(result.binds) == ["training/fine-tune-0", "training/fine-tune-1"]
