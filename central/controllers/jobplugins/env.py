"""The `env` job plugin: each container learns its pod's index within the task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.controllers.jobplugins.base import JobPlugin, add_env, pod_task


class EnvPlugin(JobPlugin):
    name = "env"

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        _, index = pod_task(pod)
        # VK_ is the name Volcano kept for compatibility with kube-batch; VC_ is the current one.
        add_env(pod, {"VK_TASK_INDEX": str(index), "VC_TASK_INDEX": str(index)})
