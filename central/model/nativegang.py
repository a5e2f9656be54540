"""Kubernetes' own gang API (KEP-4671, `scheduling.k8s.io/v1beta1` PodGroup) read as PodGroups.

With the GenericWorkload feature gate (beta, off by default, in Kubernetes 1.37) the API
server serves `scheduling.k8s.io/v1beta1` Workload and PodGroup, and a pod names its group in
`spec.schedulingGroup.podGroupName`. A Workload is only a template that workload controllers
copy into PodGroups; the PodGroup is what the scheduler reads, so Workloads are not read.

A native PodGroup becomes a Caldera PodGroup (`as_podgroup`):
- `spec.schedulingPolicy.gang.minCount` is minMember; `basic` (each pod on its own) is
  minMember 1;
- the queue is the PodGroup's `scheduling.volcano.sh/queue-name` annotation (Volcano's key
  for a pod's queue), else `default`; the API has no queue;
- `spec.priorityClassName` is the priority class, resolved as a Volcano PodGroup's is;
- its phase and conditions are the ones the scheduler last gave it (the native status has
  no phase); a PodGroup seen for the first time (a new one, or after a restart) is Pending,
  and enqueue admits it again in the same cycle.
Not read: `schedulingConstraints` (topology), `resourceClaims`, `disruptionMode`,
`preemptionPolicy` and composite PodGroups.

A pod that names a native PodGroup and carries no `scheduling.k8s.io/group-name` annotation
is seen with that annotation (`pod_view`), so it is one of the gang's tasks. A Volcano
PodGroup takes precedence over a native one of the same namespace and name (`NativeGroups`):
the native one is refused while the Volcano one exists, and read again once it is gone.

What the scheduler writes back is the status kube-scheduler writes
(`initially_scheduled`): the `PodGroupInitiallyScheduled` condition, True (reason
Scheduled) once the gang was placed whole, never turned back to False after that, and False
(reason Unschedulable, the gang's why-pending message) while it cannot be placed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.errors import InputError
from central.model.cache import ClusterCache
from central.model.fields import get_path, integer, metadata, typed
from central.model.parse import GROUP_NAME, QUEUE_NAME

API_VERSION = "scheduling.k8s.io/v1beta1"
NATIVE_MARK = "caldera.sh/native-podgroup"  # on the Caldera view of a native PodGroup, never on the API object
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
MESSAGE_LIMIT = 32768  # metav1.Condition's message


def is_native(obj: Mapping[str, Any]) -> bool:
    """A PodGroup of Kubernetes' gang API (not Volcano's `scheduling.volcano.sh`)."""
    return obj.get("kind") == "PodGroup" and str(obj.get("apiVersion") or "").startswith("scheduling.k8s.io/")


def group_of(pod: Mapping[str, Any]) -> str | None:
    """The native PodGroup a pod names in `spec.schedulingGroup.podGroupName`, if any."""
    spec = pod.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, Mapping) else None
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) and name else None


def pod_view(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as one of its native gang's tasks: with `scheduling.k8s.io/group-name` naming
    the group, unless it names a group that way already (then that one counts). A copy; the
    pod itself is left as the API has it."""
    group = group_of(pod)
    meta = pod.get("metadata")
    if group is None or not isinstance(meta, Mapping):
        return pod
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and annotations.get(GROUP_NAME):
        return pod
    return {**pod, "metadata": {**meta, "annotations": {**(annotations or {}), GROUP_NAME: group}}}


def min_member(native: Mapping[str, Any]) -> int:
    policy = typed(get_path(native, "spec.schedulingPolicy", {}), Mapping, "spec.schedulingPolicy")
    gang, basic = policy.get("gang"), policy.get("basic")
    if gang is not None and basic is not None:
        raise InputError("spec.schedulingPolicy", "exactly one of basic or gang may be set, got both")
    if gang is not None:
        return integer(typed(gang, Mapping, "spec.schedulingPolicy.gang").get("minCount"),
                       "spec.schedulingPolicy.gang.minCount", 1)
    if basic is not None:
        return 1
    raise InputError("spec.schedulingPolicy", "one of basic or gang is required")


def as_podgroup(native: Mapping[str, Any], phase: str = "Pending",
                conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The Caldera (Volcano-shaped) PodGroup a native one is read as, in the given phase and
    with the given conditions (those the scheduler last gave it). InputError names the field."""
    namespace, name = metadata(native, namespaced=True)
    meta = native["metadata"]
    annotations = typed(meta.get("annotations") or {}, Mapping, "metadata.annotations")
    spec = typed(native.get("spec") or {}, Mapping, "spec")
    queue = annotations.get(QUEUE_NAME) or "default"
    priority_class = typed(spec.get("priorityClassName") or "", str, "spec.priorityClassName")
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "uid": meta.get("uid", ""),
                     "creationTimestamp": meta.get("creationTimestamp", ""),
                     "annotations": {**{str(k): str(v) for k, v in annotations.items()}, NATIVE_MARK: API_VERSION}},
        "spec": {"minMember": min_member(native), "queue": str(queue),
                 **({"priorityClassName": priority_class} if priority_class else {})},
        "status": {"phase": phase, "conditions": list(conditions or [])},
    }


def initially_scheduled(status: Mapping[str, Any], native: Mapping[str, Any], now: str) -> dict[str, Any] | None:
    """The `PodGroupInitiallyScheduled` condition to write onto `native`, given the Caldera
    status the cycle computed for it (`status`: phase and conditions) and the time now
    (RFC 3339); None when there is nothing to write. As kube-scheduler's: True (Scheduled)
    once the gang was placed, False (Unschedulable) with why while it cannot be, a True never
    turned back to False, lastTransitionTime kept while the status stays, and observedGeneration
    the generation read."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping) and c.get("status") == "True"]
    if status.get("phase") in ("Running", "Completed") or any(c.get("type") == "Scheduled" for c in conditions):
        wanted = ("True", "Scheduled", "")
    else:
        unschedulable = next((c for c in conditions if c.get("type") == "Unschedulable"), None)
        if unschedulable is None:
            return None
        wanted = ("False", "Unschedulable", str(unschedulable.get("message") or "")[:MESSAGE_LIMIT])
    current = next((c for c in get_path(native, "status.conditions", []) or []
                    if isinstance(c, Mapping) and c.get("type") == INITIALLY_SCHEDULED), None)
    generation = get_path(native, "metadata.generation", 0)
    if current is not None:
        if current.get("status") == "True" and wanted[0] != "True":
            return None
        if (current.get("status"), current.get("reason"), current.get("message") or "") == wanted \
                and current.get("observedGeneration", 0) == generation:
            return None
    kept = current is not None and current.get("status") == wanted[0] and current.get("lastTransitionTime")
    condition = {"type": INITIALLY_SCHEDULED, "status": wanted[0], "reason": wanted[1], "message": wanted[2],
                 "lastTransitionTime": kept or now}
    if generation:
        condition["observedGeneration"] = generation
    return condition


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class NativeGroups:
    """What the cache is told of PodGroups, native and Volcano's, and of pods, while native
    PodGroups are read: `view(event, obj)` is the (event, object) to hand the cache instead,
    or None for nothing. A native PodGroup whose name a Volcano PodGroup holds raises
    InputError (it is refused, the Volcano one counts) until that one is deleted; then the
    native one is read in its place."""

    def __init__(self, cache: ClusterCache):
        self.cache = cache
        self.native: dict[str, Mapping[str, Any]] = {}  # "ns/name" -> the native PodGroup as last seen
        self.volcano: set[str] = set()  # "ns/name" of the Volcano PodGroups seen

    def view(self, event: str, obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if obj.get("kind") == "Pod":
            return (event, obj) if event == "DELETED" else (event, pod_view(obj))
        if obj.get("kind") != "PodGroup":
            return event, obj
        key = _key(obj)
        if not is_native(obj):
            if event != "DELETED":
                self.volcano.add(key)
                return event, obj
            self.volcano.discard(key)
            native = self.native.get(key)
            if native is not None:
                try:
                    return "MODIFIED", self._read(native)
                except InputError:  # unreadable: Volcano's goes and nothing replaces it until it is fixed
                    pass
            return event, obj
        if event == "DELETED":
            self.native.pop(key, None)
            return None if key in self.volcano else (event, obj)
        self.native[key] = obj
        if key in self.volcano:
            raise InputError("metadata.name", "a Volcano PodGroup (scheduling.volcano.sh) of the same name takes "
                                              "precedence; this PodGroup is not read while that one exists")
        return event, self._read(obj)

    def _read(self, native: Mapping[str, Any]) -> dict[str, Any]:
        """The native PodGroup as a Caldera one, keeping the phase and conditions the cache's
        view of it has (the native status holds neither)."""
        job = self.cache.jobs.get(_key(native))
        if job is not None and job.has_podgroup and NATIVE_MARK in job.annotations:
            return as_podgroup(native, job.phase or "Pending", job.conditions)
        return as_podgroup(native)
