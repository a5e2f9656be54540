"""Builders of valid objects; each test breaks exactly one thing in a copy."""

from __future__ import annotations

from typing import Any


def container(name: str = "main", **resources: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "busybox"}
    if resources:
        out["resources"] = resources
    return out


def task(name: str, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container()], "restartPolicy": "Never"}},
        **extra,
    }


def job(
    name: str = "train", queue: str = "default", tasks: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"queue": queue, "tasks": tasks if tasks is not None else [task("ps"), task("worker", 2)], **spec},
    }


def queue(name: str, parent: str | None = None, state: str | None = None, **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": dict(spec),
    }
    if parent:
        out["spec"]["parent"] = parent
    if state:
        out["status"] = {"state": state}
    return out


def podgroup(name: str = "pg", queue: str = "default", namespace: str = "ml", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue, "minMember": 1, **spec},
    }
