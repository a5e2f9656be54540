"""The agent's API calls on a real kube-apiserver, with the agent's own bound token and
daemonset/'s RBAC: evict a pod, set or clear its node's taint, list its node's pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.kube import KubeApi
from nodeagent.pods import HttpPodSource, PodInfo, pods_from_pod_list
from tests.nodeagent.realnode import agent_token, bound_pod


@pytest.fixture
def agent(real, tmp_path: Path) -> KubeApi:
    """The agent's client for its node, with its own token, through the fault proxy."""
    node = f"{real.namespace}-n1"  # cluster-scoped: unique to the test
    real.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
              "spec": {"taints": [{"key": "other", "effect": "PreferNoSchedule"}]}})
    token = agent_token(real, node, tmp_path / "token")
    return KubeApi(real.proxy.url, node, token_file=token, ca_file=real.real.ca)


def test_evict_posts_a_policy_v1_eviction(real, agent: KubeApi) -> None:
    bound_pod(real, "job-0", agent.node_name)
    agent.evict(real.namespace, "job-0")  # the apiserver refuses anything but a valid policy/v1 Eviction
    assert real.pod("job-0") is None  # no grace period: gone at once
    assert real.proxy.count("create", "pods/eviction") == 1
    assert not real.proxy.forbidden  # the agent's own token, allowed by its RBAC


def test_refused_eviction_raises_for_the_strategy_to_count(real, agent: KubeApi) -> None:
    # Running: a Pending pod is evicted whatever the budget says
    bound_pod(real, "blocked", agent.node_name, metadata={"labels": {"app": "blocked"}}, status={"phase": "Running"})
    real.put({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "blocked"}}}})
    with pytest.raises(OSError, match="429"):  # the budget refuses: Too Many Requests
        agent.evict(real.namespace, "blocked")
    assert real.pod("blocked") is not None


def _taints(real, node_name: str) -> list[dict]:
    """The node's taints but the node lifecycle controller's own (not-ready, ...)."""
    node = real.get("v1", "Node", node_name)
    return [{"key": t["key"], "effect": t["effect"]} for t in node["spec"].get("taints") or []
            if not t["key"].startswith("node.kubernetes.io/")]


def test_taint_added_then_removed_keeping_other_taints(real, agent: KubeApi) -> None:
    # the node controller writes the Node meanwhile; set_taint itself outlasts those conflicts
    agent.set_taint("volcano.sh/offline-job-evicting", "NoSchedule", True)
    assert _taints(real, agent.node_name) == [
        {"key": "other", "effect": "PreferNoSchedule"},
        {"key": "volcano.sh/offline-job-evicting", "effect": "NoSchedule"},
    ]
    assert real.proxy.count("patch", "nodes") >= 1 and not real.proxy.forbidden
    agent.set_taint("volcano.sh/offline-job-evicting", "NoSchedule", False)
    assert _taints(real, agent.node_name) == [{"key": "other", "effect": "PreferNoSchedule"}]


def test_a_conflicting_write_is_read_again_and_kept(real, agent: KubeApi, monkeypatch) -> None:
    """Someone else taints the Node between the agent's read and its write: the apiserver
    refuses the stale write (409), and the retry keeps both taints."""
    call, raced = agent._call, []

    def racing(method: str, path: str, *args, **kwargs):
        answer = call(method, path, *args, **kwargs)
        if method == "GET" and not raced:
            raced.append(True)
            taints = real.get("v1", "Node", agent.node_name)["spec"]["taints"]
            real.admin.merge_patch(real.url("v1", "Node", agent.node_name),
                                   {"spec": {"taints": taints + [{"key": "racer", "effect": "NoSchedule"}]}})
        return answer

    monkeypatch.setattr(agent, "_call", racing)
    agent.set_taint("volcano.sh/offline-job-evicting", "NoSchedule", True)
    assert {"key": "racer", "effect": "NoSchedule"} in _taints(real, agent.node_name)
    assert {"key": "volcano.sh/offline-job-evicting", "effect": "NoSchedule"} in _taints(real, agent.node_name)
    assert real.proxy.count("patch", "nodes") >= 2  # the refused one and the retry


def test_pods_from_the_api_server(real, agent: KubeApi, tmp_path: Path) -> None:
    node = agent.node_name
    real.put({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": real.namespace},
              "value": 1000})
    web = bound_pod(real, "web", node, metadata={"annotations": {"volcano.sh/qos-level": "LC"}},
                    spec={"priorityClassName": real.namespace, "containers": [
                        {"name": "a", "image": "busybox", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                        {"name": "b", "image": "busybox", "resources": {"requests": {"cpu": "1.5"}}}]},
                    status={"phase": "Running"})
    job = bound_pod(real, "job", node, status={"phase": "Running"})
    odd = bound_pod(real, "odd", node, metadata={"annotations": {"volcano.sh/qos-level": "GOLD"}})
    bound_pod(real, "done", node, status={"phase": "Succeeded"})
    bound_pod(real, "elsewhere", f"{node}-other", status={"phase": "Running"})
    source = HttpPodSource(f"{agent.base_url}/api/v1/pods?fieldSelector=spec.nodeName%3D{node}",
                           tmp_path / "token", "BE", ca_file=real.real.ca)
    assert sorted(source.pods(), key=lambda p: p.name) == sorted([
        PodInfo(real.namespace, "web", web["metadata"]["uid"], "Burstable", "LC", 1000, 2.0, 1 << 30),
        PodInfo(real.namespace, "job", job["metadata"]["uid"], "BestEffort", "BE", 0),  # no annotation: the default
        PodInfo(real.namespace, "odd", odd["metadata"]["uid"], "BestEffort", "BE", 0),  # unknown level: the default
    ], key=lambda p: p.name)
    assert not real.proxy.forbidden  # listing its node's pods is the agent's to do


def test_malformed_pod_list_items_are_skipped() -> None:
    """What no apiserver sends but a kubelet's /pods or a proxy might: skipped, not fatal."""
    doc = {"kind": "PodList", "items": [
        {"metadata": {"namespace": "shop", "name": "web", "uid": "u1"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}},
                                 {"name": "d", "resources": {"requests": {"cpu": "1"}}}]},
         "status": {"phase": "Running", "qosClass": "Burstable"}},
        {"metadata": {"name": "no-uid"}, "status": {"phase": "Running"}},
        "not-a-pod",
    ]}
    assert pods_from_pod_list(doc, "BE") == [PodInfo("shop", "web", "u1", "Burstable", "BE", 0, 1.0)]


@pytest.mark.parametrize("text, value", [
    pytest.param("500m", 0.5, id="milli"), pytest.param("2Gi", 2 * 2**30, id="binary"),
    pytest.param("1G", 1e9, id="decimal"), pytest.param(3, 3.0, id="plain-int"),
])
def test_parse_quantity(text: object, value: float) -> None:
    from nodeagent.pods import parse_quantity

    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1Qi", "-1", "abc"])
def test_parse_quantity_rejects(text: str) -> None:
    from nodeagent.pods import parse_quantity

    with pytest.raises(ValueError):
        parse_quantity(text)
