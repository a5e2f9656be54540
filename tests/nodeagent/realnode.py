"""A node agent's footing on the real kube-apiserver: its own bound token, and pods bound to
its node."""

from __future__ import annotations

from pathlib import Path

from central.localcluster import controlplane
from central.localcluster.install import service_account_token


def agent_token(real, node: str, path: Path) -> Path:
    """The agent's projected token as daemonset/nodeagent.yaml mounts it: caldera-nodeagent,
    bound to its Node (so it carries the node's name)."""
    real.real.apply_rbac()
    path.write_text(service_account_token(real.admin, "caldera-system", "caldera-nodeagent", controlplane.ISSUER,
                                          bound_node=node) + "\n")
    return path


def bound_pod(real, name: str, node: str, **extra: object) -> dict:
    """Create a pod already bound to `node`, with no grace period; `extra` merges into its
    metadata, spec and top level."""
    return real.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **extra.pop("metadata", {})},
                     "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "c", "image": "busybox"}], **extra.pop("spec", {})},
                     **extra})
