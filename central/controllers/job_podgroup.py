"""The PodGroup half of a job's sync: what to do with the job's PodGroup, and whether pods may be made.

    job_podgroup(podgroups, job) -> dict | None       the job's PodGroup among the watched ones
    sync_podgroup(spec, podgroup, version) -> PodGroupSync

- the job's PodGroup is `<job>-<job uid>`, or else an existing `<job>` (one made before the
  rename, or by an older Caldera), which is adopted as Volcano's getPodGroupByJob does;
- no PodGroup: create it (stamped with the job's version); pods wait for it;
- a PodGroup stamped with an older version (left over from before a restart): delete it; a
  new one is created on a later call, once it is gone;
- otherwise, after the job was scaled (admission lets minAvailable, replicas and
  priorityClassName change), resize it: minMember, minTaskMember, minResources,
  priorityClassName (Volcano's updatePodGroupIfJobUpdate); pods may be made once it has left
  Pending (the scheduler enqueued it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from central.controllers.job_policies import JOB_VERSION
from central.model.jobs import build_podgroup, min_resources
from central.model.jobspec import JobSpec

RESIZED_PODGROUP_FIELDS = ("minMember", "minTaskMember", "minResources", "priorityClassName")


@dataclass(frozen=True)
class PodGroupSync:
    create: dict[str, Any] | None = None
    delete: str | None = None  # name of a stale PodGroup
    update: dict[str, Any] | None = None  # new spec fields (RESIZED_PODGROUP_FIELDS; None: remove)
    pods_allowed: bool = False  # the PodGroup of this version exists and has left Pending


def job_podgroup(podgroups: Mapping[str, Mapping[str, Any]], job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`podgroups` by "<namespace>/<name>"."""
    meta = job.get("metadata") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    return (podgroups.get(f"{key}-{meta['uid']}") if meta.get("uid") else None) or podgroups.get(key)


def sync_podgroup(spec: JobSpec, podgroup: Mapping[str, Any] | None, version: int) -> PodGroupSync:
    if podgroup is None:
        created = build_podgroup(spec)
        created["metadata"]["annotations"][JOB_VERSION] = str(version)
        return PodGroupSync(create=created)
    meta = podgroup.get("metadata") or {}
    stamped = (meta.get("annotations") or {}).get(JOB_VERSION)
    if stamped is not None and str(stamped).isdigit() and int(stamped) < version:
        return PodGroupSync(delete=None if meta.get("deletionTimestamp") else str(meta["name"]))
    phase = str((podgroup.get("status") or {}).get("phase") or "Pending")
    return PodGroupSync(update=resized_fields(spec, podgroup), pods_allowed=phase != "Pending")


def resized_fields(spec: JobSpec, podgroup: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields to rewrite when the PodGroup no longer matches the job; None when it does.
    The cheap comparison first: minResources costs O(pods) to add up."""
    current = podgroup.get("spec") or {}
    task_min = {t.name: t.min_available for t in spec.tasks}
    if (current.get("minMember"), current.get("minTaskMember") or {}, current.get("priorityClassName")) == (
        spec.min_available, task_min, spec.priority_class or None
    ):
        return None
    return {"minMember": spec.min_available, "minTaskMember": task_min, "minResources": min_resources(spec),
            "priorityClassName": spec.priority_class or None}
