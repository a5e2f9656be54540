"""Kubelet CPU state and batch-resource estimation: what the agent reads of the kubelet's CPU
manager, and the batch CPU and memory it publishes for offline pods."""

import json

import pytest

from nodeagent.collect.kubelet import read_kubelet_cpu_state
from nodeagent.health import Health
from nodeagent.oversubscription import BatchEstimator


def test_static_cpu_manager_state_gives_policies_and_shared_cpus(tmp_path):
    (tmp_path / "config.yaml").write_text("kind: KubeletConfiguration\ncpuManagerPolicy: static\ntopologyManagerPolicy: single-numa-node\n")
    (tmp_path / "cpu_manager_state").write_text(json.dumps(
        {"policyName": "static", "defaultCpuSet": "0-1,6-15", "entries": {"uid": {"c": "2-5"}}, "checksum": 1}))
    state = read_kubelet_cpu_state(tmp_path, Health())
    assert (state.cpu_manager_policy, state.topology_manager_policy) == ("static", "single-numa-node")
    assert state.free_cpus(list(range(8))) == [0, 1, 6, 7]


def test_defaults_and_unknowns(tmp_path):
    health = Health()
    assert read_kubelet_cpu_state(tmp_path, health).cpu_manager_policy == ""  # no files: unknown
    (tmp_path / "config.yaml").write_text("kind: KubeletConfiguration\n")
    state = read_kubelet_cpu_state(tmp_path, health)
    assert (state.cpu_manager_policy, state.topology_manager_policy, state.shared_cpus) == ("none", "none", None)
    assert state.free_cpus([0, 1]) == [0, 1]


@pytest.mark.parametrize("config, state", [
    pytest.param("{ not yaml", None, id="garbled-config"),
    pytest.param("- a list", None, id="config-not-a-map"),
    pytest.param("cpuManagerPolicy: static\n", '{"policyName": "static", "defaultCpuSet": "3-1"}', id="bad-cpuset"),
    pytest.param("cpuManagerPolicy: static\n", "not json", id="garbled-state"),
])
def test_garbage_is_counted_not_fatal(tmp_path, config, state):
    (tmp_path / "config.yaml").write_text(config)
    if state is not None:
        (tmp_path / "cpu_manager_state").write_text(state)
    health = Health()
    result = read_kubelet_cpu_state(tmp_path, health)
    assert health.error_count("kubelet") >= 1
    assert result.shared_cpus is None


def test_batch_estimate_applies_the_ratio_and_smooths_towards_the_newest():
    estimator = BatchEstimator(ratio_percent=50, samples=3)
    assert estimator.update(16, 64 * 2**30, 6, 32 * 2**30) == (5000, 16 * 2**30)  # (16-6)*0.5 cores
    cpu, _ = estimator.update(16, 64 * 2**30, 16, 32 * 2**30)  # online uses everything now
    assert cpu == int((1 * 5000 + 2 * 0) / 3)  # weights 1, 2: newest counts double
    assert estimator.update(8, 1, 20, 2)[0] == int((1 * 5000 + 0 + 0) / 7)  # never negative


def test_ratio_must_be_a_percentage():
    with pytest.raises(ValueError):
        BatchEstimator(ratio_percent=150)
