"""Volcano's job plugins, as pure functions of a job and its pods.

    apply_plugins(job, pods) -> list[dict]         pods with every plugin's edits (copies)
    edit_pods(job, pods) -> pods                   the same edits, made in place on pods the caller owns
    job_objects(job, names=None) -> list[dict]     Services, ConfigMaps, Secrets, NetworkPolicies to create
    updated_objects(job) -> list[dict]             objects to replace after the job was scaled (svc host lists)
    deleted_objects(job) -> list[tuple[str, str]]  (kind, name) to delete when the job is killed
    build_plugins(job) -> list[JobPlugin]          parsed from spec.plugins; InputError on a bad one

Plugins run in a fixed order (env, svc, ssh, then the frameworks, ray and hcclrank) so the result does not
depend on dict order. Unknown plugin names are refused by admission; here they raise.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from central.controllers.jobplugins.base import JobPlugin
from central.controllers.jobplugins.env import EnvPlugin
from central.controllers.jobplugins.frameworks import MpiPlugin, PytorchPlugin, TensorflowPlugin
from central.controllers.jobplugins.ray import HcclRankPlugin, RayPlugin
from central.controllers.jobplugins.ssh import SshPlugin
from central.controllers.jobplugins.svc import SvcPlugin
from central.errors import InputError

PLUGINS: dict[str, type[JobPlugin]] = {
    p.name: p
    for p in (EnvPlugin, SvcPlugin, SshPlugin, PytorchPlugin, TensorflowPlugin, MpiPlugin, RayPlugin, HcclRankPlugin)
}
# The webhook adds these plugins when a framework plugin needs them.
NEEDS = {"pytorch": ("svc",), "tensorflow": ("svc",), "mpi": ("svc", "ssh"), "ray": ("svc",)}


def build_plugins(job: Mapping[str, Any]) -> list[JobPlugin]:
    raw = (job.get("spec") or {}).get("plugins") or {}
    if not isinstance(raw, Mapping):
        raise InputError("spec.plugins", "expected a map of plugin name to argument list")
    out = []
    for name in sorted(raw, key=lambda n: (list(PLUGINS).index(n) if n in PLUGINS else len(PLUGINS), n)):
        if name not in PLUGINS:
            raise InputError(
                f"spec.plugins.{name}", f"unable to find job plugin {json.dumps(name)}; known: {', '.join(PLUGINS)}"
            )
        args = raw[name]
        if args is not None and not isinstance(args, list):
            raise InputError(f"spec.plugins.{name}", "expected a list of arguments")
        out.append(PLUGINS[name](args))
    return out


def apply_plugins(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return edit_pods(job, [copy.deepcopy(dict(pod)) for pod in pods])


def edit_pods(job: Mapping[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plugins = build_plugins(job)
    for pod in pods:
        for plugin in plugins:
            plugin.on_pod_create(job, pod)
    return pods


def job_objects(job: Mapping[str, Any], names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Objects the plugins create for the job; only those of `names` when given."""
    wanted = None if names is None else set(names)
    return [obj for p in build_plugins(job) if wanted is None or p.name in wanted for obj in p.on_job_add(job)]


def updated_objects(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [obj for p in build_plugins(job) for obj in p.on_job_update(job)]


def deleted_objects(job: Mapping[str, Any], names: Iterable[str] | None = None) -> list[tuple[str, str]]:
    wanted = None if names is None else set(names)
    return [ref for p in build_plugins(job) if wanted is None or p.name in wanted for ref in p.on_job_delete(job)]
