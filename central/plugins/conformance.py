"""conformance: critical pods and kube-system pods are never victims."""

from __future__ import annotations

from central.framework.plugin import Plugin
from central.model.objects import TaskInfo


class Conformance(Plugin):
    name = "conformance"

    def preemptable(self, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [t for t in candidates if not t.critical]

    reclaimable = preemptable
