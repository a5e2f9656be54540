"""What every job plugin shares: flag parsing and small pod-editing helpers.

A plugin is built from the argument list the job gives it (`spec.plugins: {svc:
["--disable-network-policy"]}`), parsed like Go's flag package does for Volcano:
`--name=value`, `-name=value`, `--name value`, and a bare `--name` for a boolean, whose value
is any of Go's strconv.ParseBool spellings (1, t, T, TRUE, true, True and their false twins).
An unknown flag or a bad value raises InputError naming the flag and listing the known ones,
so admission can refuse the job (Volcano logs it and ignores it and every flag after it).

A plugin's `ignored` flags are the ones Volcano's own suites and older releases pass that its
current plugins do not define (`ssh --no-root`, removed in 2020; `svc --enable-networking`):
Volcano parses them as unknown and goes on without them, so they are accepted and have no
effect. Unlike Volcano, the flags after one of them still count.

Hosts: with the svc plugin every pod gets hostname = pod name and subdomain = job name, so
pod `<job>-<task>-<i>` is reachable as `<job>-<task>-<i>.<job>` inside the namespace.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from central.errors import InputError
from central.model.fields import GO_BOOLS

JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"


class JobPlugin:
    """Base of the job plugins: subclasses set `name` and `flags` and override the hooks."""

    name: ClassVar[str]
    flags: ClassVar[dict[str, str | bool]] = {}  # flag -> default (a bool default makes a boolean flag)
    ignored: ClassVar[frozenset[str]] = frozenset()  # flags Volcano accepts without effect (module docstring)

    def __init__(self, args: list[Any] | None = None):
        self.options: dict[str, str | bool] = dict(self.flags)
        self._memo: dict[str, Any] = {}
        pending = [str(a) for a in (args or [])]
        while pending:
            arg = pending.pop(0)
            key, has_value, value = arg.lstrip("-").partition("=")
            if arg.startswith("-") and key in self.ignored:
                continue
            if not arg.startswith("-") or key not in self.flags:
                known = ", ".join(f"--{f}" for f in self.flags) or "none"
                raise InputError(f"spec.plugins.{self.name}", f"unknown flag {json.dumps(arg)}; known flags: {known}")
            if isinstance(self.flags[key], bool):
                if has_value and value not in GO_BOOLS:
                    raise InputError(
                        f"spec.plugins.{self.name}", f"flag --{key} expects true or false, got {json.dumps(value)}"
                    )
                self.options[key] = not has_value or GO_BOOLS[value]
            elif has_value:
                self.options[key] = value
            elif pending:
                self.options[key] = pending.pop(0)
            else:
                raise InputError(f"spec.plugins.{self.name}", f"flag --{key} needs a value")
        for key in self.flags:
            if key.endswith("port"):
                self.int_option(key)  # refuse a bad port when the job is admitted, not when pods are made

    def option(self, key: str) -> str:
        return str(self.options[key])

    def int_option(self, key: str) -> int:
        value = self.option(key)
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise InputError(
                f"spec.plugins.{self.name}", f"flag --{key} must be a port number, got {json.dumps(value)}"
            )
        return int(value)

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        """A per-job value (host lists, ...) computed on the first pod only: a plugin instance
        serves one job, and recomputing it per pod would make a job's pods cost O(n^2)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        """Edit `pod` (already a private copy) before it is created."""

    def on_job_add(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Objects to create once for the job (Services, ConfigMaps, Secrets, ...)."""
        return []

    def on_job_update(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Objects to replace after the job was scaled (host lists change)."""
        return []

    def on_job_delete(self, job: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(kind, name) of the objects on_job_add created, to delete when the job is killed."""
        return [(obj["kind"], obj["metadata"]["name"]) for obj in self.on_job_add(job)]


# --- helpers on plain dicts -------------------------------------------------------------------


def job_name(job: Mapping[str, Any]) -> str:
    return str(job["metadata"]["name"])


def job_namespace(job: Mapping[str, Any]) -> str:
    return str(job["metadata"].get("namespace") or "default")


def tasks(job: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(task name, replicas) in spec order."""
    return [
        (str(t.get("name") or f"default{i}"), int(t.get("replicas", 0)))
        for i, t in enumerate(job["spec"].get("tasks") or [])
    ]


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def host(job: str, task: str, index: int) -> str:
    """The pod's DNS name inside the namespace (hostname.subdomain)."""
    return f"{pod_name(job, task, index)}.{job}"


def task_hosts(job: Mapping[str, Any], task: str) -> list[str]:
    name = job_name(job)
    return [host(name, t, i) for t, replicas in tasks(job) if t == task for i in range(replicas)]


def pod_task(pod: Mapping[str, Any]) -> tuple[str, int]:
    """(task name, index) from Volcano's pod annotations."""
    annotations = pod["metadata"].get("annotations") or {}
    return str(annotations.get(TASK_SPEC, "")), int(annotations.get(TASK_INDEX, 0))


def owner(job: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": job_name(job),
        "uid": job["metadata"].get("uid", ""),
        "controller": True,
    }


def object_meta(job: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": job_namespace(job),
        "ownerReferences": [owner(job)],
        "labels": {JOB_NAME: job_name(job), JOB_NAMESPACE: job_namespace(job)},
    }


def containers(pod: dict[str, Any], init: bool = True) -> list[dict[str, Any]]:
    spec = pod["spec"]
    return list(spec.get("containers") or []) + (list(spec.get("initContainers") or []) if init else [])


def add_env(pod: dict[str, Any], env: Mapping[str, str], init: bool = True) -> None:
    """Set env vars on every container, replacing a variable of the same name."""
    for c in containers(pod, init):
        kept = [e for e in c.get("env") or [] if e.get("name") not in env]
        c["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]


def add_volume(pod: dict[str, Any], volume: dict[str, Any], mount_path: str) -> None:
    """Add a volume (once) and mount it at `mount_path` in every container."""
    spec = pod["spec"]
    volumes = spec.setdefault("volumes", [])
    if not any(v.get("name") == volume["name"] for v in volumes):
        volumes.append(volume)
    for c in containers(pod):
        mounts = c.setdefault("volumeMounts", [])
        if not any(m.get("mountPath") == mount_path for m in mounts):
            mounts.append({"name": volume["name"], "mountPath": mount_path})


def add_port(pod: dict[str, Any], name: str, port: int) -> None:
    for c in containers(pod, init=False):
        ports = c.setdefault("ports", [])
        if not any(p.get("containerPort") == port for p in ports):
            ports.append({"name": name, "containerPort": port, "protocol": "TCP"})


def env_name(task: str) -> str:
    """Task name as an env var fragment: `ps-0` -> `PS_0`."""
    return task.upper().replace("-", "_")
