"""A job's `spec.volumes`: the PersistentVolumeClaims it asks for, mounted into every pod.

Each entry has a `mountPath` and either `volumeClaimName` (an existing PVC, used as is) or
`volumeClaim` (a PVC spec the controller creates). Volcano names a created claim
`<job>-volume-<random>` and writes the name back into the job's spec; here it is
`<job>-volume-<i>` (i = the entry's index), so it is known without a spec write and the same
on every call (a deliberate difference: the controllers never write a Job's spec). Created
claims belong to the job (ownerReference) and live until it is deleted, across restarts.
As in Volcano, a job naming a claim that does not exist waits (the loop retries, boundedly).

    claims(job) -> list[(claim name, mount path, PVC spec or None)]
    claims_to_create(job) -> list[dict]      PersistentVolumeClaim objects
    missing_claims(job, existing) -> list    named claims not among `existing` (names in its namespace)
    mount_claims(job, pod) -> None           adds the volumes and mounts to the pod
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from central.controllers.plugins.base import add_volume, job_name, object_meta


def claims(job: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any] | None]]:
    out = []
    for i, volume in enumerate((job.get("spec") or {}).get("volumes") or []):
        if not isinstance(volume, Mapping) or not volume.get("mountPath"):
            continue  # admission refuses these; never mount a volume nowhere
        if volume.get("volumeClaimName"):
            out.append((str(volume["volumeClaimName"]), str(volume["mountPath"]), None))
        else:
            out.append((f"{job_name(job)}-volume-{i}", str(volume["mountPath"]), volume.get("volumeClaim") or {}))
    return out


def claims_to_create(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": object_meta(job, name), "spec": dict(spec)}
        for name, _, spec in claims(job)
        if spec is not None
    ]


def missing_claims(job: Mapping[str, Any], existing: Collection[str]) -> list[str]:
    return [name for name, _, spec in claims(job) if spec is None and name not in existing]


def mount_claims(job: Mapping[str, Any], pod: dict[str, Any]) -> None:
    for name, path, _ in claims(job):
        add_volume(pod, {"name": name, "persistentVolumeClaim": {"claimName": name}}, path)
