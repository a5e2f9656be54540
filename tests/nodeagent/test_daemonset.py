"""daemonset/nodeagent.yaml parses and its parts agree with each other and with the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent.config import leaves, load_config

MANIFEST = Path(__file__).resolve().parents[2] / "daemonset" / "nodeagent.yaml"
LIST_PODS = "caldera-nodeagent-list-pods"  # the RBAC fallback for clusters without the authorizer


def _parsed() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


@pytest.fixture(scope="module")
def docs() -> dict[str, dict[str, Any]]:
    """The agent's objects but the fallback pods-list role and binding, one per kind."""
    parsed = [d for d in _parsed() if d["metadata"]["name"] != LIST_PODS]
    by_kind = {d["kind"]: d for d in parsed}
    assert len(by_kind) == len(parsed), "one object per kind expected"
    return by_kind


@pytest.fixture(scope="module")
def pod(docs) -> dict[str, Any]:
    return docs["DaemonSet"]["spec"]["template"]


@pytest.fixture(scope="module")
def container(pod) -> dict[str, Any]:
    [agent] = pod["spec"]["containers"]
    return agent


@pytest.fixture(scope="module")
def config(docs, tmp_path_factory):
    path = tmp_path_factory.mktemp("cm") / "agent.yaml"
    path.write_text(docs["ConfigMap"]["data"]["agent.yaml"])
    return path


def _flatten(data: dict[str, Any], prefix: str = "") -> set[str]:
    keys = set()
    for key, value in data.items():
        keys |= _flatten(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key}
    return keys


def test_kinds(docs) -> None:
    assert set(docs) == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"}


def test_selector_matches_template_labels(docs, pod) -> None:
    selector = docs["DaemonSet"]["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()


def test_service_account_and_rbac_bind_together(docs, pod) -> None:
    sa = docs["ServiceAccount"]["metadata"]
    assert pod["spec"]["serviceAccountName"] == sa["name"]
    assert sa["namespace"] == docs["DaemonSet"]["metadata"]["namespace"]
    binding = docs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == docs["ClusterRole"]["metadata"]["name"]
    assert {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]} in binding["subjects"]


def test_rbac_is_least_privilege(docs) -> None:
    grants = {(r, v) for rule in docs["ClusterRole"]["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert grants == {("nodes", "get"), ("nodes", "patch"), ("pods/eviction", "create")}
    assert all(rule["apiGroups"] == [""] for rule in docs["ClusterRole"]["rules"])


def test_the_pods_list_fallback_is_its_own_role_and_binding(docs) -> None:
    """Left out where the authorization webhook decides the agent's pod reads."""
    fallback = {d["kind"]: d for d in _parsed() if d["metadata"]["name"] == LIST_PODS}
    assert set(fallback) == {"ClusterRole", "ClusterRoleBinding"}
    assert fallback["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]
    sa = docs["ServiceAccount"]["metadata"]
    assert fallback["ClusterRoleBinding"]["roleRef"]["name"] == LIST_PODS
    assert fallback["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]


def test_mounts_match_volumes(pod, container) -> None:
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert set(mounts) == set(volumes)
    writable = {n for n, m in mounts.items() if not m.get("readOnly") and "hostPath" in volumes[n]}
    assert writable == {"host-cgroup-kubepods"}  # host paths are read-only except the pods' cgroups


def test_host_paths_are_narrow(pod, container) -> None:
    """Not the kubelet's directory (its client key, every pod's volumes and tokens): its
    pod-resources socket only; and of the cgroup tree only the pods' subtree is writable."""
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    host = {volumes[m["name"]]["hostPath"]["path"]: m for m in container["volumeMounts"]
            if "hostPath" in volumes[m["name"]]}
    assert set(host) == {"/sys", "/proc", "/sys/fs/cgroup", "/sys/fs/cgroup/kubepods.slice",
                         "/var/lib/kubelet/pod-resources"}
    assert not [p for p in host if "/var/lib/kubelet".startswith(p.rstrip("/") + "/") or p == "/var/lib/kubelet"]
    assert [p for p, m in host.items() if not m.get("readOnly")] == ["/sys/fs/cgroup/kubepods.slice"]
    # the writable subtree is mounted where the read-only tree shows it, so the agent's paths agree
    assert host["/sys/fs/cgroup/kubepods.slice"]["mountPath"] == host["/sys/fs/cgroup"]["mountPath"] + "/kubepods.slice"


def test_the_exporter_listens_on_the_pod_ip_only(pod, container, config) -> None:
    assert pod["spec"]["hostNetwork"] is True  # so 0.0.0.0 would be every address of the node
    assert "--exporter-address=$(POD_IP)" in container["command"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert load_config(config).exporter.address == "127.0.0.1"  # without the flag: loopback


def test_config_map_holds_every_key_and_loads(docs, pod, container, config) -> None:
    data = yaml.safe_load(config.read_text())
    assert _flatten(data) == {key for key, _, _ in leaves()}
    cfg = load_config(config)
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    config_mount = next(p for p, n in mounts.items() if "configMap" in volumes[n])
    assert volumes[mounts[config_mount]]["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
    assert container["command"][-2:] == ["--config", f"{config_mount}/agent.yaml"]
    for root in (cfg.paths.sys_root, cfg.paths.proc_root, cfg.paths.cgroup_root,
                 str(Path(cfg.paths.pod_resources_socket).parent)):
        assert root in mounts, f"{root} is not mounted"
    assert cfg.paths.kubelet_root == ""  # not mounted: the socket instead
    identity = volumes[mounts[str(Path(cfg.stream.token_file).parent)]]["projected"]["sources"]
    assert Path(cfg.stream.ca_file).parent == Path(cfg.stream.token_file).parent
    token = next(s["serviceAccountToken"] for s in identity if "serviceAccountToken" in s)
    assert token["audience"] == "caldera-scheduler" and token["path"] == Path(cfg.stream.token_file).name
    ca = next(s["secret"] for s in identity if "secret" in s)
    assert ca["items"] == [{"key": "ca.crt", "path": Path(cfg.stream.ca_file).name}]  # never the server's key
    assert not cfg.stream.cert_file and not cfg.stream.key_file


def test_probes_and_scrape_use_the_metrics_port(pod, container, config) -> None:
    port = load_config(config).exporter.port
    assert container["ports"][0]["containerPort"] == port
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == str(port)


def test_not_privileged_and_bounded(container) -> None:
    security = container["securityContext"]
    assert security["privileged"] is False and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
