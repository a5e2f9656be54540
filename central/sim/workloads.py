"""Kubernetes' own workloads in `caldera simulate`: the pods their controllers would create.

    expand_workload(obj, scheduler_name) -> [PodGroup, pod, ...] | []   (is_workload(obj) first)

A Deployment (through the ReplicaSet its controller makes), a ReplicaSet, a StatefulSet or a
batch/v1 Job whose pod template names `scheduler_name` becomes its pods, as their controllers
name them, each with a controller ownerReference, and the one PodGroup the PodGroup controller
makes for them (`podgroup-<owner UID>`, minMember 1 or the owner's
`scheduling.volcano.sh/group-min-member`: central/controllers/podgroups.py). A workload for
another scheduler, or with no replicas, gives nothing (the caller counts it as skipped).

How many pods: spec.replicas (default 1); a Job's spec.parallelism (default 1), no more than
spec.completions, none while suspended. They are created once, at the owner's
`sim.caldera.sh/submit-at`: a pod that ends is not replaced, and a Job does not start more
pods towards its completions.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from central.controllers.podgroups import podgroup_for_pod
from central.errors import InputError
from central.model.fields import object_ref
from central.model.podlife import SUBMIT_AT

KINDS = {"Deployment": "apps/", "ReplicaSet": "apps/", "StatefulSet": "apps/", "Job": "batch/"}
# the letters Kubernetes' generated names use (no vowels, no look-alikes)
NAME_LETTERS = "bcdfghjklmnpqrstvwxz2456789"


def is_workload(obj: Mapping[str, Any]) -> bool:
    prefix = KINDS.get(str(obj.get("kind")))
    return prefix is not None and str(obj.get("apiVersion", "")).startswith(prefix)


def expand_workload(obj: Mapping[str, Any], scheduler_name: str) -> list[dict[str, Any]]:
    """The PodGroup, then the pods of the workload `obj`; [] when it is not ours or has no pods."""
    kind = str(obj["kind"])
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    template = spec.get("template") if isinstance(spec, Mapping) else None
    if not isinstance(meta, Mapping) or not meta.get("name") or not isinstance(template, Mapping):
        raise InputError(object_ref(obj), "metadata.name and spec.template are required")
    if (template.get("spec") or {}).get("schedulerName") != scheduler_name:
        return []
    namespace = str(meta.get("namespace") or "default")
    name = str(meta["name"])
    annotations = dict(meta.get("annotations") or {})
    owner: dict[str, Any] = {"apiVersion": str(obj["apiVersion"]), "kind": kind, "name": name,
             "uid": str(meta.get("uid") or f"{namespace}-{name}"), "controller": True, "blockOwnerDeletion": True}
    if kind == "Deployment":  # its controller makes a ReplicaSet (carrying its annotations) that owns the pods
        rs_name = f"{name}-{_letters(repr(sorted(template.items())), 10)}"
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": f"{namespace}-{rs_name}",
                 "controller": True, "blockOwnerDeletion": True}
    pods = [_pod(template, owner, namespace, pod_name, annotations.get(SUBMIT_AT))
            for pod_name in _pod_names(kind, str(owner["name"]), _count(obj, kind, spec))]
    if not pods:
        return []
    decision = podgroup_for_pod(pods[0], {"metadata": {"annotations": annotations}}, (scheduler_name,))
    if decision is None:  # the template names its own PodGroup: the pods go there
        return pods
    podgroup = decision.podgroup
    if SUBMIT_AT in annotations:
        podgroup["metadata"]["annotations"][SUBMIT_AT] = annotations[SUBMIT_AT]
    for pod in pods:
        pod["metadata"]["annotations"].update(decision.pod_annotations)
    return [podgroup, *pods]


def _count(obj: Mapping[str, Any], kind: str, spec: Mapping[str, Any]) -> int:
    def number(field: str, default: int) -> int:
        value = spec.get(field, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"{object_ref(obj)}: spec.{field}", f"expected a whole number, got {value!r}")
        return value

    if kind != "Job":
        return number("replicas", 1)
    if spec.get("suspend") is True:
        return 0
    parallelism = number("parallelism", 1)
    return min(parallelism, number("completions", parallelism)) if spec.get("completions") is not None else parallelism


def _pod_names(kind: str, owner: str, count: int) -> list[str]:
    """A StatefulSet's pods are `<name>-<ordinal>`; the others' `<owner>-<5 letters>`."""
    if kind == "StatefulSet":
        return [f"{owner}-{i}" for i in range(count)]
    return [f"{owner}-{_letters(f'{owner}/{i}', 5)}" for i in range(count)]


def _letters(seed: str, n: int) -> str:
    """`n` letters of NAME_LETTERS fixed by `seed`: the same manifests give the same names."""
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big")
    out = []
    for _ in range(n):
        digest, i = divmod(digest, len(NAME_LETTERS))
        out.append(NAME_LETTERS[i])
    return "".join(out)


def _pod(template: Mapping[str, Any], owner: dict[str, Any], namespace: str, name: str,
         submit_at: str | None) -> dict[str, Any]:
    template_meta = template.get("metadata") or {}
    annotations = {str(k): str(v) for k, v in (template_meta.get("annotations") or {}).items()}
    if submit_at is not None:  # the pods appear when their owner is created
        annotations[SUBMIT_AT] = str(submit_at)
    labels = dict(template_meta.get("labels") or {})
    if owner["kind"] == "StatefulSet":
        labels["statefulset.kubernetes.io/pod-name"] = name
    elif owner["kind"] == "Job":
        labels.update({"batch.kubernetes.io/job-name": owner["name"], "job-name": owner["name"]})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"{namespace}-{name}", "labels": labels,
                         "annotations": annotations, "ownerReferences": [dict(owner)]},
            "spec": copy.deepcopy(dict(template.get("spec") or {})), "status": {"phase": "Pending"}}
