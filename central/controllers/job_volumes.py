"""A job's `spec.volumes`: the PersistentVolumeClaims it asks for, mounted into every pod.

Each entry has a `mountPath` and either `volumeClaimName` (an existing PVC, used as is) or
`volumeClaim` (a PVC spec the controller creates). Volcano names a created claim
`<job>-volume-<random>` and writes the name back into the job's spec; here it is
`<job>-volume-<i>` (i = the entry's index), so it is known without a spec write and the same
on every call (a deliberate difference: the controllers never write a Job's spec). Created
claims belong to the job (ownerReference) and live until it is deleted, across restarts.
As in Volcano, a job naming a claim that does not exist waits (the loop retries, boundedly).
The entries are parsed with the rest of the job (central/model/jobspec.py: `JobSpec.claims`).

    claims_to_create(job, spec) -> list[dict]   PersistentVolumeClaim objects
    missing_claims(job, existing) -> list       named claims not among `existing` (names in its namespace)
    mount_claims(spec, pod) -> None             adds the volumes and mounts to the pod
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from central.controllers.jobplugins.base import add_volume, object_meta
from central.errors import InputError
from central.model.jobspec import JobSpec, clone, job_spec


def claims_to_create(job: Mapping[str, Any], spec: JobSpec) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": object_meta(job, c.name),
         "spec": clone(c.create)}
        for c in spec.claims
        if c.create is not None
    ]


def missing_claims(job: Mapping[str, Any], existing: Collection[str]) -> list[str]:
    try:
        spec = job_spec(job)
    except InputError:
        return []  # the job controller reports the job as InvalidJob
    return [c.name for c in spec.claims if c.create is None and c.name not in existing]


def mount_claims(spec: JobSpec, pod: dict[str, Any]) -> None:
    for claim in spec.claims:
        add_volume(pod, {"name": claim.name, "persistentVolumeClaim": {"claimName": claim.name}}, claim.mount_path)
