"""What Volcano's e2e suites assume of a cluster, made on a `caldera up` cluster: the
`volcano-system` namespace, the scheduler ConfigMap of Volcano CI's helm release (named
`integration`) holding CI's scheduler configuration, and 4 worker nodes of 4 CPU / 16 GiB
like CI's kind cluster (plus the KWOK nodes CI adds for the hypernode suite). These are naming
adaptations; the tests themselves are not changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from central.conformance.confsync import CONFIGMAP, KEY, NAMESPACE
from central.kube.client import KubeClient
from central.localcluster import install
from central.localcluster.simkubelet import NodeSpec

CI_CONF = Path("installer/helm/chart/volcano/config/volcano-scheduler-ci.conf")
# The feature gates Volcano's Makefile turns on, for the scheduler and the webhook, per suite.
SUITE_FEATURE_GATES = {"schedulinggates": "SchedulingGatesQueueAdmission=true"}


# The nodes Volcano CI adds for a suite, beside the workers: the hypernode suite's 8 KWOK nodes
# (hack/run-e2e-kind.sh's create-kwok-node: 8 CPU, 8 GiB, tainted), simulated here as the rest.
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
SUITE_NODES = {"hypernode": [NodeSpec(f"kwok-node-{i}", cpu="8", memory="8Gi", numa=1, taints=(KWOK_TAINT,))
                             for i in range(8)]}


def nodes(suite: str = "") -> list[NodeSpec]:
    return [NodeSpec(f"node-{i}", cpu="4", memory="16Gi", numa=1) for i in range(1, 5)] + SUITE_NODES.get(suite, [])


def feature_gates(suite: str) -> str:
    """The `--feature-gates` value Volcano CI runs `suite` with ("" for none)."""
    return SUITE_FEATURE_GATES.get(suite, "")


def ci_scheduler_conf(src: Path) -> str:
    """Volcano CI's scheduler configuration, from Volcano's source tree."""
    return (src / CI_CONF).read_text()


def objects(conf: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": NAMESPACE, "labels": {"kubernetes.io/metadata.name": NAMESPACE}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
         "data": {KEY: conf}},
    ]


def prepare(admin: KubeClient, conf: str) -> None:
    discovery = install.Discovery(admin)
    for obj in objects(conf):
        install.apply(admin, discovery, obj)
