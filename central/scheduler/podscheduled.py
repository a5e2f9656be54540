"""Which pending pods get their `PodScheduled=False` condition written, and when.

cluster-autoscaler and Karpenter scale up only for pods that carry `PodScheduled` with status
False and reason `Unschedulable` (and, for cluster-autoscaler, a schedulerName it is told to
watch); a pod with nothing there is invisible to them. Volcano writes the condition on every
pending pod a session considered (`taskUnschedulable`), and only when it changed
(`podConditionHaveUpdate`): so does this, with Volcano's reason `Unschedulable` also on the
pods of a gang that as a whole cannot fit, so that an autoscaler sees the whole gang's demand
(Volcano marks the gang's pods that alone would fit `Schedulable`, which autoscalers skip).
The pods of a job a JobValid vote refuses (a gang still short of pods, as while an operator
creates them) get nothing: Volcano takes such a job out of its session at open, and an
autoscaler would add nodes for pods that wait for their siblings, not for room
(`CycleResult.invalid_job_pods`); their PodGroup's Unschedulable condition says why.

Rate limits: a pod whose condition already says Unschedulable is rewritten for a new message
at most once per `message_interval` seconds (why-pending texts carry counts that move each
cycle); a change of status or reason is written at once. The API server sets the condition to
True on bind, which is how it is cleared. A pod with scheduling gates is left alone: the API
server gives it `SchedulingGated`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

REASON = "Unschedulable"  # v1.PodReasonUnschedulable, what autoscalers match


def _podscheduled(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return condition
    return None


class PodScheduledMarks:
    def __init__(self, message_interval: float = 10.0):
        self.message_interval = message_interval
        self._written: dict[str, tuple[str, float]] = {}  # pod key -> (message, monotonic time) last written

    def due(self, pod_key: str, pod: Mapping[str, Any], message: str, now: float) -> dict[str, Any] | None:
        """The condition to write on the pending pod, or None when it says so already (or said
        so too recently, for a message change)."""
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or spec.get("schedulingGates") or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return None
        current = _podscheduled(pod)
        marked = current is not None and current.get("status") == "False" and current.get("reason") == REASON
        last = self._written.get(pod_key)
        if last is not None or marked:
            said = last[0] if last is not None else str((current or {}).get("message") or "")
            if said == message:
                return None
            if last is not None and now - last[1] < self.message_interval:
                return None
        self._written[pod_key] = (message, now)
        since = current.get("lastTransitionTime") if current is not None and current.get("status") == "False" else None
        return {"type": "PodScheduled", "status": "False", "reason": REASON, "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": since or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}

    def keep_only(self, pod_keys: Iterable[str]) -> None:
        """Forget the pods no longer pending (bound, deleted): a pod pending again starts afresh."""
        keep = set(pod_keys)
        for key in [k for k in self._written if k not in keep]:
            del self._written[key]
