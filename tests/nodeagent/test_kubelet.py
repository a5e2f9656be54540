from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodeagent.collect.kubelet import KubeletState, read_kubelet_state
from nodeagent.collect.node_usage import NodeUsage
from nodeagent.collect.pod_usage import PodUsage
from nodeagent.collect.window import Stat
from nodeagent.health import Health
from nodeagent.pods import PodInfo
from nodeagent.qos.manager import QosConfig, batch_capacity
from tests.nodeagent.fakes import write

STATIC = json.dumps({"policyName": "static", "defaultCpuSet": "0,5-7",
                     "entries": {"pod-a": {"app": "1-2"}, "pod-b": {"db": "3,4"}}, "checksum": 1})


@pytest.mark.parametrize("files, expected, errors", [
    pytest.param({}, KubeletState(), 0, id="nothing-mounted"),
    pytest.param({"config.yaml": "kind: KubeletConfiguration\n"}, KubeletState("none", "none"), 0,
                 id="defaults"),
    pytest.param({"config.yaml": "cpuManagerPolicy: static\ntopologyManagerPolicy: single-numa-node\n",
                  "cpu_manager_state": STATIC},
                 KubeletState("static", "single-numa-node", frozenset({1, 2, 3, 4})), 0, id="static"),
    pytest.param({"cpu_manager_state": '{"policyName": "none", "defaultCpuSet": "0-7"}'},
                 KubeletState("none", ""), 0, id="state-only"),
    pytest.param({"cpu_manager_state": "{not json"}, KubeletState(), 1, id="garbled-state"),
    pytest.param({"cpu_manager_state": '{"policyName": "static", "entries": {"p": {"c": "x-y"}}}'},
                 KubeletState("static", ""), 1, id="garbled-cpuset"),
    pytest.param({"config.yaml": "- a list\n"}, KubeletState(), 1, id="config-not-a-mapping"),
])
def test_kubelet_state(tmp_path: Path, files: dict[str, str], expected: KubeletState, errors: int) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    health = Health()
    assert read_kubelet_state(tmp_path, health) == expected
    assert health.error_count() == errors


def _usage(level: str, cpu: float, mem: float) -> PodUsage:
    return PodUsage(PodInfo("ns", level, f"uid-{level}", qos_level=level), Stat(0, cpu, 0), Stat(0, mem, 0))


def test_batch_capacity_is_what_online_work_leaves() -> None:
    node = NodeUsage(Stat(0, 5.0, 0), Stat(0, 40e9, 0), 100 << 30)
    pods = [_usage("LC", 2.0, 10e9), _usage("BE", 3.0, 30e9)]
    cpu, memory = batch_capacity(QosConfig(), 10.0, 100_000_000_000, node, pods)
    # online = node - offline: 2 cores, 10 GB; 10 x 65 % - 2 = 4.5 cores; 100 GB x 90 % - 10 GB = 80 GB
    assert cpu == pytest.approx(4.5) and memory == 80_000_000_000
    assert batch_capacity(QosConfig(), 1.0, 1000, node, [])[0] == 0.0  # never negative
