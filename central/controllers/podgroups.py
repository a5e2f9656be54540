"""The PodGroup controller as a pure function: a PodGroup for each plain pod of our scheduler.

    podgroup_for_pod(pod, owner=None, scheduler_names=("volcano",)) -> PodGroupDecision | None
    podgroup_of_idle_owner(owner) -> str | None     the PodGroup to delete for a workload scaled to 0

A pod scheduled by us without the `scheduling.k8s.io/group-name` annotation (a Deployment's,
a StatefulSet's, a bare pod) gets PodGroup `podgroup-<owner UID>` (its controller owner, so
all replicas of a ReplicaSet share one) or `podgroup-<pod UID>`, and the pod is annotated
with that name. minMember is 1, or the owner's `scheduling.volcano.sh/group-min-member`;
minResources = the pod's requests x minMember; the queue comes from the pod's
`scheduling.volcano.sh/queue-name` (default `default`); priorityClassName and the
preemptable, disruption-budget and network-topology annotations are carried over, and the
last two, `volcano.sh/network-topology-mode` (hard or soft; anything else: hard) and
`volcano.sh/network-topology-highest-tier` (a positive integer; anything else: none), become
the PodGroup's spec.networkTopology, as Volcano's PodGroup controller reads them.
None means nothing to do (another scheduler's pod, or one already in a group). A pod that
names one of Kubernetes' own PodGroups (`spec.schedulingGroup`, `central.model.nativegang`)
is in a group already: a PodGroup of its own would take it out of its gang (Volcano's
controller, which predates that API, would make one).

A ReplicaSet or StatefulSet scaled to 0 replicas (a Deployment's old ReplicaSet after a
rollout) loses its `podgroup-<owner UID>`, as Volcano's PodGroup controller deletes it; a
later scale-up makes it again from the pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from central.model.fields import map_at
from central.model.nativegang import group_of
from central.model.parse import GROUP_MIN_MEMBER, GROUP_NAME, QUEUE_NAME
from central.model.podspec import pod_requests
from central.resources.vectors import format_value

TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
TOPOLOGY_TIER = "volcano.sh/network-topology-highest-tier"
CARRIED_PREFIXES = (
    "volcano.sh/preemptable",
    "volcano.sh/jdb-",
    "volcano.sh/network-topology",
    "volcano.sh/revocable-zone",
    "volcano.sh/cooldown-time",
)


@dataclass(frozen=True)
class PodGroupDecision:
    podgroup: dict[str, Any]  # to create (an AlreadyExists from a sibling pod is fine)
    pod_annotations: dict[str, str]  # to patch onto the pod


def podgroup_for_pod(
    pod: Mapping[str, Any], owner: Mapping[str, Any] | None = None, scheduler_names: tuple[str, ...] = ("volcano",)
) -> PodGroupDecision | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    if spec.get("schedulerName") not in scheduler_names or annotations.get(GROUP_NAME) or group_of(pod):
        return None
    controller = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    name = f"podgroup-{controller['uid'] if controller else meta.get('uid', '')}"
    min_member = _min_member(owner)
    requests = pod_requests(spec)
    carried = {k: str(v) for k, v in annotations.items() if k.startswith(CARRIED_PREFIXES)}
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace") or "default",
            "annotations": carried,
            "ownerReferences": [
                controller
                or {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.get("name"),
                    "uid": meta.get("uid", ""),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "minMember": min_member,
            "queue": str(annotations.get(QUEUE_NAME) or "default"),
            "minResources": {k: format_value(k, v * min_member) for k, v in sorted(requests.items())},
            **({"priorityClassName": spec["priorityClassName"]} if spec.get("priorityClassName") else {}),
            **({"networkTopology": topology} if (topology := _network_topology(annotations)) else {}),
        },
        "status": {"phase": "Pending"},
    }
    return PodGroupDecision(podgroup, {GROUP_NAME: name})


def _min_member(owner: Mapping[str, Any] | None) -> int:
    value = str((((owner or {}).get("metadata") or {}).get("annotations") or {}).get(GROUP_MIN_MEMBER, "1"))
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _network_topology(annotations: Mapping[str, Any]) -> dict[str, Any] | None:
    mode, tier = annotations.get(TOPOLOGY_MODE), annotations.get(TOPOLOGY_TIER)
    if mode is None and tier is None:
        return None
    out: dict[str, Any] = {"mode": str(mode).lower() if str(mode).lower() in ("hard", "soft") else "hard"}
    if isinstance(tier, str) and tier.isdigit() and int(tier) >= 1:
        out["highestTierAllowed"] = int(tier)
    return out


def podgroup_of_idle_owner(owner: Mapping[str, Any]) -> str | None:
    """`podgroup-<uid>` of a ReplicaSet or StatefulSet whose spec.replicas is 0, else None (an
    unset replicas is 1)."""
    spec = map_at(owner, "spec")
    uid = (owner.get("metadata") or {}).get("uid")
    if owner.get("kind") not in ("ReplicaSet", "StatefulSet") or not uid or spec.get("replicas", 1) != 0:
        return None
    return f"podgroup-{uid}"
