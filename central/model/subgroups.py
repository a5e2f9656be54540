"""A PodGroup's sub-groups (`spec.subGroupPolicy`, Volcano's subjobs) and the pods in each.

Volcano's job controller writes one policy per task with a `partitionPolicy`:

    subGroupPolicy:
    - name: worker                      # the task's name
      subGroupSize: 2                   # partitionSize: the pods of one partition
      minSubGroups: 1                   # minPartitions
      labelSelector: {matchLabels: {volcano.sh/task-spec: worker}}
      matchLabelKeys: [volcano.sh/partition-id]
      networkTopology: {mode: hard, highestTierAllowed: 1}

and labels each pod with its partition (`volcano.sh/partition-id`: index / partitionSize). A
pod belongs to the sub-group of the first policy whose selector matches it and whose
matchLabelKeys it all carries, non-empty; the sub-group is keyed by those labels' values.
A pod no policy takes (or a policy without matchLabelKeys) is in the job's default group,
placed with the job as a whole (Volcano's getOrCreateSubJob).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from central.model.fields import integer, typed
from central.model.hypernodes import parse_network_topology
from central.model.objects import SubGroupPolicy, TaskInfo
from central.model.podspec import selector

PARTITION_ID = "volcano.sh/partition-id"  # the pod label Volcano's job controller sets


@dataclass(slots=True, eq=False)
class SubGroup:
    policy: SubGroupPolicy
    key: str  # "<policy>-<the match labels' values>", as Volcano's subjob id
    tasks: list[TaskInfo] = field(default_factory=list)


def parse_subgroup_policies(raw: Any, where: str) -> tuple[SubGroupPolicy, ...]:
    out = []
    for i, item in enumerate(typed(raw or [], list, where)):
        at = f"{where}[{i}]"
        item = typed(item, Mapping, at)
        size = item.get("subGroupSize")
        minimum = item.get("minSubGroups")
        keys = typed(item.get("matchLabelKeys") or [], list, f"{at}.matchLabelKeys")
        out.append(SubGroupPolicy(
            name=typed(item.get("name") or "", str, f"{at}.name"),
            size=1 if size is None else integer(size, f"{at}.subGroupSize", 1),
            min_groups=0 if minimum is None else integer(minimum, f"{at}.minSubGroups", 0),
            selector=selector(item["labelSelector"], f"{at}.labelSelector") if item.get("labelSelector") else None,
            match_keys=tuple(typed(k, str, f"{at}.matchLabelKeys[{j}]") for j, k in enumerate(keys)),
            network_topology=parse_network_topology(item.get("networkTopology"), f"{at}.networkTopology"),
        ))
    return tuple(out)


def group_key(policy: SubGroupPolicy, labels: Mapping[str, str]) -> str | None:
    """The sub-group of `policy` a pod with `labels` is in; None when the policy does not take it."""
    if not policy.match_keys or (policy.selector is not None and not policy.selector.matches(dict(labels))):
        return None
    values = [labels.get(key) or "" for key in policy.match_keys]
    return None if "" in values else f"{policy.name}-{'-'.join(values)}"


def sub_groups(policies: tuple[SubGroupPolicy, ...], tasks: Iterable[TaskInfo]) -> dict[str, SubGroup]:
    """The job's sub-groups by key, each with its tasks in the order given; tasks in the
    default group are left out."""
    groups: dict[str, SubGroup] = {}
    for task in tasks:
        labels = dict(task.template.labels)
        for policy in policies:
            key = group_key(policy, labels)
            if key is not None:
                groups.setdefault(key, SubGroup(policy, key)).tasks.append(task)
                break
    return groups
