"""conformance: critical pods and kube-system pods are never victims."""

from __future__ import annotations

from central.framework import extension as ext
from central.framework.plugin import Plugin
from central.model.objects import TaskInfo


class Conformance(Plugin, ext.Preemptable, ext.Reclaimable):
    name = "conformance"

    def preemptable(self, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [t for t in candidates if not t.critical]

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(reclaimer, candidates)
