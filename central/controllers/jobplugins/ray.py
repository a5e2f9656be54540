"""Job plugins `ray` and `hcclrank`, as Volcano's.

ray (`--head`, `--headContainer`, `--worker`, `--workerContainer`, `--port` 6379,
`--dashboardPort` 8265, `--clientPort` 10001): the head task's container named
`headContainer` runs `ray start --head --block` on those ports and gets them opened (named
gcs, dashboard, client-server); the worker containers run `ray start --block` against the
head's GCS at `<head hostname>.<subdomain>:<port>` (default `<job>-<head>-0.<job>`); a Service
`<job>-head-svc` selects the head pod on the three ports. The webhook adds svc for the host
names, and admission refuses a job without the head task (Volcano fails at pod creation).

hcclrank (`--master`, `--worker`): every pod of those tasks gets the annotation
`hccl/rankIndex` (Huawei Ascend HCCL's rank): its RANK env var when it has one, else master
pods their index and workers the master replicas plus theirs. A pod already annotated is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.controllers.jobplugins.base import (
    JOB_NAME,
    JOB_NAMESPACE,
    TASK_SPEC,
    JobPlugin,
    containers,
    job_name,
    object_meta,
    pod_name,
    pod_task,
    tasks,
)
from central.errors import InputError

HCCL_RANK = "hccl/rankIndex"


class RayPlugin(JobPlugin):
    name = "ray"
    flags = {"head": "head", "headContainer": "head", "worker": "worker", "workerContainer": "worker",
             "port": "6379", "dashboardPort": "8265", "clientPort": "10001"}

    def _ports(self) -> dict[str, int]:
        return {"gcs": self.int_option("port"), "dashboard": self.int_option("dashboardPort"),
                "client-server": self.int_option("clientPort")}

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        head = self.option("head")
        head_task = next((t for t in job["spec"].get("tasks") or [] if t.get("name") == head), None)
        if head_task is None:
            raise InputError("spec.plugins.ray", f"the job has no head task {head!r}")
        task, _ = pod_task(pod)
        ports = self._ports()
        for c in containers(pod, init=False):
            if task == head and c.get("name") == self.option("headContainer"):
                opened = {p.get("containerPort") for p in c.get("ports") or []}
                c.setdefault("ports", []).extend(
                    {"name": n, "containerPort": p} for n, p in ports.items() if p not in opened)
                c["command"] = ["sh", "-c", f"ray start --head --block --dashboard-host=0.0.0.0 --port={ports['gcs']} "
                                            f"--dashboard-port={ports['dashboard']} "
                                            f"--ray-client-server-port={ports['client-server']}"]
            if task == self.option("worker") and c.get("name") == self.option("workerContainer"):
                c["command"] = ["sh", "-c", f"ray start --block --address={self._head_address(job, head_task)}:{ports['gcs']}"]

    @staticmethod
    def _head_address(job: Mapping[str, Any], head_task: Mapping[str, Any]) -> str:
        spec = (head_task.get("template") or {}).get("spec") or {}
        hostname = spec.get("hostname") or pod_name(job_name(job), str(head_task["name"]), 0)
        return f"{hostname}.{spec.get('subdomain') or job_name(job)}"

    def on_job_add(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        name = job_name(job)
        meta = object_meta(job, f"{name}-head-svc")
        selector = {JOB_NAME: name, JOB_NAMESPACE: meta["namespace"], TASK_SPEC: self.option("head")}
        ports = [{"name": n, "port": p, "targetPort": n, "protocol": "TCP"} for n, p in self._ports().items()]
        return [{"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"selector": selector, "ports": ports}}]


class HcclRankPlugin(JobPlugin):
    name = "hcclrank"
    flags = {"master": "master", "worker": "worker"}

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        annotations = pod["metadata"].setdefault("annotations", {})
        if annotations.get(HCCL_RANK):
            return
        rank = next((e.get("value") for c in containers(pod, init=False) for e in c.get("env") or []
                     if e.get("name") == "RANK"), None)
        if rank:
            annotations[HCCL_RANK] = str(rank)
            return
        task, index = pod_task(pod)
        master, worker = self.option("master"), self.option("worker")
        if task == master:
            annotations[HCCL_RANK] = str(index)
        elif task == worker:
            annotations[HCCL_RANK] = str(dict(tasks(job)).get(master, 0) + index)
