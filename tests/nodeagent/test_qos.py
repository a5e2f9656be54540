from __future__ import annotations

import errno
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.cgroup.driver import CgroupWriter, open_driver
from nodeagent.cgroup.layout import CgroupLayout
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.pod_usage import PodUsage
from nodeagent.collect.window import Stat
from nodeagent.health import Health
from nodeagent.pods import PodInfo
from nodeagent.qos.burst import CpuBurst, CpuBurstConfig, MemoryLow, MemoryLowConfig
from nodeagent.qos.eviction import Eviction, EvictionConfig, Pressure, victims
from nodeagent.qos.manager import QosConfig, QosManager
from nodeagent.qos.strategies import CpuSuppressConfig, CpuSuppression, MemoryProtectConfig, MemoryProtection
from tests.nodeagent.fakes import OFFLINE, fake_pod_cgroup, layout_with_offline_parent, write


@pytest.mark.parametrize("allocatable, threshold, online, floor, budget", [
    pytest.param(8.0, 65, 2.0, 1.0, 3.2, id="room-left"),
    pytest.param(8.0, 65, 6.0, 1.0, 1.0, id="floor"),
    pytest.param(16.0, 100, 0.0, 0.5, 16.0, id="idle-node"),
])
def test_cpu_budget(allocatable: float, threshold: float, online: float, floor: float, budget: float) -> None:
    strategy = CpuSuppression(CpuSuppressConfig(threshold_percent=threshold, min_cores=floor), None, OFFLINE)
    assert strategy.budget(allocatable, online) == pytest.approx(budget)


@settings(deadline=None, max_examples=40)
@given(allocatable=st.floats(0, 256), online=st.floats(0, 512), threshold=st.floats(1, 100),
       floor=st.floats(0.01, 8))
def test_cpu_budget_never_below_the_floor_nor_above_the_threshold(
        allocatable: float, online: float, threshold: float, floor: float) -> None:
    budget = CpuSuppression(CpuSuppressConfig(threshold_percent=threshold, min_cores=floor), None, OFFLINE).budget(
        allocatable, online)
    assert budget >= floor
    assert budget <= max(floor, allocatable * threshold / 100) + 1e-9


@pytest.mark.parametrize("version, file, expected", [
    pytest.param(1, "cpu/kubepods/besteffort/cpu.cfs_quota_us", "320000", id="v1"),
    pytest.param(2, "kubepods/besteffort/cpu.max", "320000 100000", id="v2"),
])
def test_cpu_suppression_writes_the_offline_parent(tmp_path: Path, version: int, file: str, expected: str) -> None:
    writer = CgroupWriter(Health())
    driver = open_driver(layout_with_offline_parent(tmp_path, version), writer)
    strategy = CpuSuppression(CpuSuppressConfig(), driver, OFFLINE)
    assert strategy.apply(8.0, 2.0) == pytest.approx(3.2)
    assert (tmp_path / file).read_text() == expected
    assert driver.cpu_quota_cores(OFFLINE) == pytest.approx(3.2)
    strategy.apply(8.0, 2.01)  # under 1 % change: no write
    assert writer.results == {(Path(file).name, "ok"): 1}


@pytest.mark.parametrize("version", [1, 2])
def test_zero_quota_is_refused_before_the_kernel(tmp_path: Path, version: int) -> None:
    health = Health()
    writer = CgroupWriter(health)
    driver = open_driver(layout_with_offline_parent(tmp_path, version), writer)
    assert not driver.set_cpu_quota(OFFLINE, 0.0)
    assert not driver.set_memory_cap(OFFLINE, 0)
    assert sum(n for (_, r), n in writer.results.items() if r == "invalid") == 2
    assert driver.cpu_quota_cores(OFFLINE) is None and driver.memory_cap(OFFLINE) is None


def test_refused_write_is_counted_not_fatal(tmp_path: Path) -> None:
    health = Health()
    writer = CgroupWriter(health)
    driver = open_driver(CgroupLayout(tmp_path, 2, "cgroupfs"), writer)
    assert not driver.set_cpu_quota("no/such/cgroup", 2.0)
    assert writer.results[("cpu.max", "failed")] == 1 and health.errors[("cgroup", "write_failed")] == 1


def test_memory_protection_caps_then_lifts(tmp_path: Path) -> None:
    writer = CgroupWriter(Health())
    driver = open_driver(layout_with_offline_parent(tmp_path, 2), writer)
    strategy = MemoryProtection(MemoryProtectConfig(online_threshold_percent=80, limit_percent=90,
                                                    hysteresis_percent=5, min_bytes=1), driver, OFFLINE)
    high = tmp_path / OFFLINE / "memory.high"
    assert strategy.apply(1000, 500) is None and high.read_text() == "max\n"
    assert strategy.apply(1000, 850) == 50 and high.read_text() == "50"
    assert strategy.apply(1000, 770) == 130  # inside the hysteresis band: still capped, at 900 - 770
    assert strategy.apply(1000, 700) is None and high.read_text() == "max"


def usage(name: str, priority: int, cpu: float, memory: float, level: str = "BE",
          cpu_request: float = 0.0, memory_request: int = 0) -> PodUsage:
    pod = PodInfo("batch", name, f"uid-{name}", "BestEffort", level, priority, cpu_request, memory_request)
    return PodUsage(pod, Stat(cpu, cpu, cpu), Stat(memory, memory, memory))


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail = fail

    def evict(self, namespace: str, name: str) -> None:
        if self.fail:
            raise OSError("429 Too Many Requests: disruption budget")
        self.calls.append(("evict", namespace, name))

    def set_taint(self, key: str, effect: str, present: bool) -> None:
        self.calls.append(("taint", key, effect, present))


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


# a: high priority; b: memory hog; c: CPU hog; idle: uses nothing at all.
PODS = [usage("a", 10, 1.0, 100e6), usage("b", 0, 0.5, 900e6), usage("c", 0, 2.0, 50e6), usage("idle", -5, 0.0, 0.0)]


@pytest.mark.parametrize("resource, need, victims_", [
    pytest.param("cpu", 1.0, ["c"], id="cpu-largest-user-of-lowest-priority-never-the-idle-pod"),
    pytest.param("memory", 500e6, ["b"], id="memory-largest-user-of-lowest-priority"),
    pytest.param("memory", 960e6, ["b", "c", "a"], id="memory-several-until-enough-is-freed"),
])
def test_victims_by_priority_then_usage_over_request(resource: str, need: float, victims_: list[str]) -> None:
    chosen = victims(Pressure(resource, need, "test"), PODS, limit=5)
    assert [u.pod.name for u in chosen] == victims_


def test_usage_over_request_outranks_raw_usage() -> None:
    # d uses more CPU than e but asked for all of it; e is 1.0 over its request.
    pods = [usage("d", 0, 3.0, 0, cpu_request=3.0), usage("e", 0, 1.5, 0, cpu_request=0.5)]
    assert [u.pod.name for u in victims(Pressure("cpu", 0.1, "test"), pods, 5)] == ["e"]


def test_memory_eviction_frees_down_to_the_low_watermark() -> None:
    api, clock = Recorder(), Clock()
    eviction = Eviction(EvictionConfig(consecutive_samples=3, cooldown_s=30, high_watermark_percent=90,
                                       low_watermark_percent=80), api, api, clock)
    for _ in range(2):
        assert eviction.node_pressure(10, 95, 8, 10e9, False) == []
    [pressure] = eviction.node_pressure(10, 95, 8, 10e9, False)
    assert pressure.resource == "memory" and pressure.need == pytest.approx(1.5e9)  # (95 - 80) % of 10 GB
    evicted = eviction.act([pressure], PODS)
    assert [u.pod.name for u in evicted] == ["b", "c", "a"]  # 1.05 GB is not enough, so all that use memory
    assert api.calls[0] == ("taint", "volcano.sh/offline-job-evicting", "NoSchedule", True)
    clock.now = 10
    assert eviction.act([pressure], PODS) == []  # cool-down
    clock.now = 20
    eviction.act([], PODS)  # no pressure, but still cooling: taint stays
    assert eviction.tainted
    clock.now = 40
    eviction.act([], PODS)
    assert not eviction.tainted and api.calls[-1][-1] is False


@pytest.mark.parametrize("held, fires", [
    pytest.param(False, True, id="offline-not-held-node-cpu-evicts"),
    pytest.param(True, False, id="offline-held-at-quota-node-cpu-does-not"),
])
def test_node_cpu_fires_only_when_offline_pods_are_not_held(held: bool, fires: bool) -> None:
    eviction = Eviction(EvictionConfig(consecutive_samples=1), Recorder(), Recorder(), Clock())
    assert bool(eviction.node_pressure(99, 10, 8, 1e9, offline_held=held)) is fires


def test_unknown_usage_is_no_pressure() -> None:
    eviction = Eviction(EvictionConfig(consecutive_samples=1), Recorder(), Recorder(), Clock())
    assert eviction.node_pressure(None, None, 8, 1e9, False) == []


@pytest.mark.parametrize("quota, used, requested, need", [
    pytest.param(2.0, 1.95, 10.0, 10 * (0.8 - 0.2), id="starved-and-using-it-all"),
    pytest.param(2.0, 0.5, 10.0, None, id="starved-but-idle"),
    pytest.param(8.0, 8.0, 10.0, None, id="satisfied"),
    pytest.param(None, 3.0, 10.0, None, id="no-quota"),
])
def test_cpu_eviction_by_offline_satisfaction(quota, used, requested, need) -> None:
    eviction = Eviction(EvictionConfig(consecutive_samples=2), Recorder(), Recorder(), Clock())
    assert eviction.cpu_satisfaction(quota, used, requested) == []
    found = eviction.cpu_satisfaction(quota, used, requested)
    assert (found[0].need if found else None) == (pytest.approx(need) if need else None)


def test_a_dip_below_the_watermark_resets_the_count() -> None:
    eviction = Eviction(EvictionConfig(consecutive_samples=2), Recorder(), Recorder(), Clock())
    for cpu in (95, 50, 95, 50, 95):
        assert eviction.node_pressure(cpu, 0, 8, 1e9, False) == []


def test_dry_run_only_counts() -> None:
    api = Recorder()
    eviction = Eviction(EvictionConfig(dry_run=True), api, api, Clock())
    assert len(eviction.act([Pressure("cpu", 0.5, "node_cpu")], PODS)) == 1
    assert api.calls == [] and eviction.results == {("cpu", "dry_run"): 1}


def test_failed_eviction_is_counted() -> None:
    api, health = Recorder(fail=True), Health()
    eviction = Eviction(EvictionConfig(), api, api, Clock(), health)
    eviction.act([Pressure("cpu", 0.5, "node_cpu")], PODS)
    assert eviction.results == {("cpu", "failed"): 1}
    assert health.errors[("eviction", "evict_failed")] == 1


def test_failing_taint_is_counted_and_retried() -> None:
    class NoTaint(Recorder):
        def set_taint(self, key: str, effect: str, present: bool) -> None:
            raise OSError("403 Forbidden")

    api, health = NoTaint(), Health()
    eviction = Eviction(EvictionConfig(cooldown_s=0), api, api, Clock(), health)
    for _ in range(3):
        eviction.act([Pressure("cpu", 0.5, "node_cpu")], PODS)
    assert not eviction.tainted and health.errors[("eviction", "taint_failed")] == 3
    assert len(api.calls) == 3  # evictions still proceed


def test_manager_never_writes_online_pod_cgroups(tmp_path: Path) -> None:
    layout = CgroupLayout(tmp_path, 2, "cgroupfs")
    online = usage("web", 100, 3.0, 100, level="LC")
    online_rel = layout.pod_dir(online.pod.uid, online.pod.qos_class)
    fake_pod_cgroup(layout, online_rel, 0, 0, 0)
    writer = CgroupWriter(Health())
    driver = open_driver(layout, writer)
    api = Recorder()
    # A misconfigured offline cgroup pointing at the online pod: the guard must refuse it.
    manager = QosManager(QosConfig(offline_cgroup=online_rel), driver, writer, api, api)
    node = NodeUsage(Stat(4.0, 4.0, 4.0), Stat(100, 100, 100), 1000)
    state = manager.run(8.0, 1000, node, [online, usage("batch", 0, 1.0, 10)])
    assert (tmp_path / online_rel / "cpu.max").read_text() == "max 100000\n"
    assert writer.results[("cpu.max", "protected")] == 1 and state.offline_cpu_quota_cores == 0.0


def test_manager_suppresses_by_node_usage_minus_offline(tmp_path: Path) -> None:
    layout = layout_with_offline_parent(tmp_path, 2)
    writer = CgroupWriter(Health())
    api = Recorder()
    manager = QosManager(QosConfig(), open_driver(layout, writer), writer, api, api)
    node = NodeUsage(Stat(4.0, 4.0, 4.0), Stat(100, 100, 100), 1000)
    state = manager.run(8.0, 10_000, node, [usage("batch", 0, 1.5, 10)])
    # online = 4.0 - 1.5 = 2.5; budget = 8 x 0.65 - 2.5 = 2.7 cores
    assert state.offline_cpu_quota_cores == pytest.approx(2.7)
    assert (tmp_path / OFFLINE / "cpu.max").read_text() == "270000 100000"


class KernelV1Writer(CgroupWriter):
    """Fault injection for what tmpfs cannot do: the v1 kernel refusing (EBUSY) a memory limit
    below what it can reclaim to. The group holds `anon` (never reclaimable without swap) and
    `cache` bytes; a limit write reclaims cache down to it, memory.force_empty drops it all."""

    def __init__(self, health: Health, anon: int, cache: int) -> None:
        super().__init__(health)
        self.anon, self.cache = anon, cache

    def write(self, directory: Path, file: str, value: str, valid: bool) -> bool:
        if file == "memory.force_empty":
            self.cache = 0
        elif file == "memory.limit_in_bytes" and int(value) >= 0:
            if int(value) < self.anon:
                self.results[(file, "failed")] += 1
                self.last_errno = errno.EBUSY
                self.health.error("cgroup", "write_failed", f"{directory / file} <- {value}: Device or resource busy")
                return False
            self.cache = min(self.cache, int(value) - self.anon)
        ok = super().write(directory, file, value, valid)
        (directory / "memory.usage_in_bytes").write_text(f"{self.anon + self.cache}\n")
        return ok


MB = 1 << 20


def test_v1_memory_protection_steps_reclaims_then_pins_and_reports_stuck(tmp_path: Path) -> None:
    layout = layout_with_offline_parent(tmp_path, 1)
    health = Health()
    writer = KernelV1Writer(health, anon=600 * MB, cache=400 * MB)
    (tmp_path / "memory" / OFFLINE / "memory.usage_in_bytes").write_text(f"{1000 * MB}\n")
    driver = open_driver(layout, writer)
    strategy = MemoryProtection(MemoryProtectConfig(min_bytes=300 * MB, step_bytes=256 * MB, evict_after_samples=3),
                                driver, OFFLINE)
    limit_file = tmp_path / "memory" / OFFLINE / "memory.limit_in_bytes"
    # Online use is over the threshold and leaves nothing: the target is the 300 MB floor.
    assert strategy.apply(10_000 * MB, 9_500 * MB) == 744 * MB  # one step below usage, cache reclaimed
    assert int(limit_file.read_text()) == 744 * MB and strategy.stuck_groups() == {}
    assert strategy.apply(10_000 * MB, 9_500 * MB, owners={OFFLINE: "batch/hog"}) == 600 * MB  # EBUSY: pinned
    assert writer.results[("memory.force_empty", "ok")] == 1 and writer.cache == 0
    assert health.failing["memory_protect"] == "target_unreachable"
    failed = writer.results[("memory.limit_in_bytes", "failed")]
    assert strategy.apply(10_000 * MB, 9_500 * MB) == 600 * MB  # still pinned: no pointless writes
    assert strategy.stuck_groups() == {OFFLINE: 300 * MB}  # what eviction must free
    assert writer.results[("memory.limit_in_bytes", "ok")] == 2
    assert writer.results[("memory.limit_in_bytes", "failed")] == failed
    assert writer.results[("memory.force_empty", "ok")] == 1
    writer.anon = 450 * MB  # the pods freed memory themselves: lowering resumes
    (tmp_path / "memory" / OFFLINE / "memory.usage_in_bytes").write_text(f"{450 * MB}\n")
    assert strategy.apply(10_000 * MB, 9_500 * MB) == 450 * MB


def test_v1_memory_protection_warning_names_the_file_and_the_pods(tmp_path: Path, caplog) -> None:
    layout = layout_with_offline_parent(tmp_path, 1)
    writer = KernelV1Writer(Health(), anon=600 * MB, cache=0)
    (tmp_path / "memory" / OFFLINE / "memory.usage_in_bytes").write_text(f"{600 * MB}\n")
    strategy = MemoryProtection(MemoryProtectConfig(min_bytes=300 * MB), open_driver(layout, writer), OFFLINE)
    with caplog.at_level("WARNING"):
        strategy.apply(10_000 * MB, 9_500 * MB, owners={OFFLINE: "batch/hog"})
    text = caplog.text
    assert f"{tmp_path}/memory/{OFFLINE}/memory.limit_in_bytes" in text and "batch/hog" in text


def test_manager_evicts_the_offender_a_cap_cannot_reach(tmp_path: Path) -> None:
    layout = layout_with_offline_parent(tmp_path, 1)
    writer = KernelV1Writer(Health(), anon=600 * MB, cache=0)
    (tmp_path / "memory" / OFFLINE / "memory.usage_in_bytes").write_text(f"{600 * MB}\n")
    api = Recorder()
    cfg = QosConfig(memory_protect=MemoryProtectConfig(min_bytes=300 * MB, evict_after_samples=2),
                    eviction=EvictionConfig(consecutive_samples=100))  # watermarks out of the way
    manager = QosManager(cfg, open_driver(layout, writer), writer, api, api)
    node = NodeUsage(Stat(1.0, 1.0, 1.0), Stat(9_500 * MB, 9_500 * MB, 9_500 * MB), 10_000 * MB)
    pods = [usage("hog", 0, 0.1, 550 * MB, memory_request=100 * MB), usage("small", 0, 0.1, 50 * MB),
            usage("idle", 0, 0.0, 0.0)]
    for _ in range(2):
        state = manager.run(8.0, 10_000 * MB, node, pods)
    assert ("evict", "batch", "hog") in api.calls and ("evict", "batch", "small") not in api.calls
    assert "memory_target" in state.pressures


def test_offline_pod_outside_the_besteffort_cgroup_is_suppressed_in_its_own(tmp_path: Path) -> None:
    layout = layout_with_offline_parent(tmp_path, 2)
    burstable_be = PodUsage(PodInfo("batch", "bb", "uid-bb", "Burstable", "BE", cpu_limit_cores=4.0),
                            Stat(1, 1, 1), Stat(1, 1, 1))
    own = layout.pod_dir("uid-bb", "Burstable")
    fake_pod_cgroup(layout, own, 0, 0, 0)
    (tmp_path / own / "cpu.max").write_text("400000 100000\n")  # the kubelet's limit from the spec: 4 cores
    writer = CgroupWriter(Health())
    api = Recorder()
    manager = QosManager(QosConfig(), open_driver(layout, writer), writer, api, api)
    node = NodeUsage(Stat(4.0, 4.0, 4.0), Stat(100, 100, 100), 1000)
    pods = [usage("x", 0, 0.5, 10), usage("y", 0, 0.5, 10), burstable_be]
    state = manager.run(16.0, 10_000, node, pods)
    # online = 4 - 2 = 2; budget = 16 x 0.65 - 2 = 8.4 cores: 2/3 to besteffort, 1/3 to the pod (under its own 4)
    assert (tmp_path / OFFLINE / "cpu.max").read_text() == "560000 100000"
    assert (tmp_path / own / "cpu.max").read_text() == "280000 100000"
    assert state.offline_cpu_quota_cores == pytest.approx(8.4)
    # The pod turns online (annotation removed): its own limit comes back, and it is protected again.
    online = PodUsage(PodInfo("batch", "bb", "uid-bb", "Burstable", "LS", cpu_limit_cores=4.0), Stat(1, 1, 1),
                      Stat(1, 1, 1))
    manager.run(16.0, 10_000, node, [*pods[:2], online])
    assert (tmp_path / own / "cpu.max").read_text() == "400000 100000"
    assert set(manager.cpu.quotas) == {OFFLINE}


def test_a_pod_group_share_never_exceeds_its_own_limit(tmp_path: Path) -> None:
    layout = layout_with_offline_parent(tmp_path, 2)
    rel = layout.pod_dir("uid-bb", "Burstable")
    fake_pod_cgroup(layout, rel, 0, 0, 0)
    strategy = CpuSuppression(CpuSuppressConfig(), open_driver(layout, CgroupWriter(Health())), OFFLINE)
    strategy.apply(16.0, 2.0, {OFFLINE: 1, rel: 1}, {rel: 1.5})  # share 4.2 each, the pod's own limit 1.5
    assert (tmp_path / rel / "cpu.max").read_text() == "150000 100000"
    strategy.release()
    assert (tmp_path / rel / "cpu.max").read_text() == "150000 100000"  # its own limit back, not "max"
    assert (tmp_path / OFFLINE / "cpu.max").read_text() == "max 100000"


@pytest.mark.parametrize("version, quota_file, quota, burst_file, expected", [
    pytest.param(1, "cpu/{rel}/cpu.cfs_quota_us", "200000", "cpu/{rel}/cpu.cfs_burst_us", "200000", id="v1"),
    pytest.param(2, "{rel}/cpu.max", "200000 100000", "{rel}/cpu.max.burst", "200000", id="v2"),
])
def test_cpu_burst_for_ls_pods_with_a_quota(tmp_path: Path, version, quota_file, quota, burst_file, expected) -> None:
    layout = CgroupLayout(tmp_path, version, "cgroupfs")
    pods = [PodInfo("shop", "web", "uid-web", "Burstable", "LS"),
            PodInfo("shop", "free", "uid-free", "Burstable", "LS")]
    for pod in pods:
        rel = layout.pod_dir(pod.uid, pod.qos_class)
        fake_pod_cgroup(layout, rel, 0, 0, 0)
        write(tmp_path, burst_file.format(rel=rel), "0\n")
    web = layout.pod_dir("uid-web", "Burstable")
    write(tmp_path, quota_file.format(rel=web), quota + "\n")
    writer = CgroupWriter(Health())
    burst = CpuBurst(CpuBurstConfig(), open_driver(layout, writer))
    assert burst.apply(pods) == 1  # "free" has no CPU limit: nothing to burst over
    assert (tmp_path / burst_file.format(rel=web)).read_text() == expected
    assert burst.apply(pods) == 0  # once per pod


def test_memory_low_protects_online_requests_on_v2_only(tmp_path: Path) -> None:
    web = PodInfo("shop", "web", "uid-web", "Burstable", "LS", memory_request_bytes=1 << 30)
    for version in (1, 2):
        layout = CgroupLayout(tmp_path / f"v{version}", version, "cgroupfs")
        fake_pod_cgroup(layout, layout.pod_dir(web.uid, web.qos_class), 0, 0, 0)
        low = MemoryLow(MemoryLowConfig(low_percent=50), open_driver(layout, CgroupWriter(Health())))
        assert low.apply([web]) == (1 if version == 2 else 0)
    assert (tmp_path / "v2" / layout.pod_dir(web.uid, web.qos_class) / "memory.low").read_text() == str(1 << 29)
    assert low.apply([web]) == 0  # once per value
