"""The deadband: sampling noise is not a change, a real move or a slow drift is."""

from __future__ import annotations

import pytest

from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.deadband import Bands, changed


def resources(cpu: float, memory: float = 4e9, batch: int | None = 2000) -> pb.Resources:
    # 8 cores, 16 GB: a 2 % deadband is 0.16 cores and 320 MB.
    return pb.Resources(cpu_capacity_cores=8, memory_capacity_bytes=16_000_000_000,
                        cpu_usage_cores=pb.WindowStat(last=cpu, avg=cpu, p95=cpu),
                        memory_usage_bytes=pb.WindowStat(last=memory, avg=memory, p95=memory),
                        batch_cpu_millicores=batch)


BANDS = Bands(2.0, resources(0))


@pytest.mark.parametrize("new, moved", [
    pytest.param(resources(1.1), False, id="cpu-noise"),
    pytest.param(resources(1.2), True, id="cpu-move-over-the-band"),
    pytest.param(resources(1.0, memory=4.3e9), False, id="memory-noise"),
    pytest.param(resources(1.0, memory=4.4e9), True, id="memory-move"),
    pytest.param(resources(1.0, batch=2100), False, id="batch-noise"),
    pytest.param(resources(1.0, batch=None), True, id="batch-becomes-unknown"),
    pytest.param(pb.Resources(cpu_capacity_cores=8, memory_capacity_bytes=16_000_000_000), True,
                 id="usage-becomes-unknown"),
])
def test_resources(new: pb.Resources, moved: bool) -> None:
    assert changed("resources", new, resources(1.0), BANDS) is moved


def test_a_slow_drift_counts_once_it_adds_up() -> None:
    sent = resources(1.0)
    assert not changed("resources", resources(1.1), sent, BANDS)
    assert not changed("resources", resources(1.15), sent, BANDS)  # still against what was *sent*
    assert changed("resources", resources(1.17), sent, BANDS)


def test_pods_noise_is_not_a_change_but_a_new_pod_is() -> None:
    def pods(*cpus: float) -> pb.Pods:
        return pb.Pods(pods=[pb.PodUsage(uid=f"u{i}", cpu_usage_cores=pb.WindowStat(last=c, avg=c, p95=c))
                             for i, c in enumerate(cpus)])

    assert not changed("pods", pods(0.5, 0.3), pods(0.45, 0.31), BANDS)
    assert changed("pods", pods(0.5, 0.3, 0.0), pods(0.5, 0.3), BANDS)
    assert changed("pods", pods(0.9, 0.3), pods(0.5, 0.3), BANDS)


def test_zero_deadband_sends_every_change() -> None:
    assert changed("resources", resources(1.001), resources(1.0), Bands(0.0, resources(0)))


def test_non_measured_fields_count_on_any_change() -> None:
    assert changed("qos", pb.QosState(no_schedule_taint=True), pb.QosState(), BANDS)
    assert not changed("qos", pb.QosState(offline_cpu_quota_cores=2.05), pb.QosState(offline_cpu_quota_cores=2.0),
                       BANDS)
