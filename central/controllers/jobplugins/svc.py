"""The `svc` job plugin: stable DNS names for a job's pods and the host lists per task.

- every pod: hostname = pod name, subdomain = job name (so `<pod>.<job>` resolves);
- a headless Service `<job>` selecting the job's pods (`--publish-not-ready-addresses`
  publishes them before they are ready, which gang-started frameworks need);
- a ConfigMap `<job>-svc` mounted at /etc/volcano, keys `<task>.host` (one host a line),
  `VC_<TASK>_HOSTS` (comma list) and `VC_<TASK>_NUM`; the last two also as env vars unless
  `--inject-hosts-env=false`;
- a NetworkPolicy letting only the job's own pods in (`--disable-network-policy` skips it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.controllers.jobplugins.base import (
    JOB_NAME,
    JOB_NAMESPACE,
    JobPlugin,
    add_env,
    add_volume,
    env_name,
    job_name,
    job_namespace,
    object_meta,
    task_hosts,
    tasks,
)

CONFIG_DIR = "/etc/volcano"
# A headless Service needs at least one port for endpoints to be published; Volcano uses this one.
PLACEHOLDER_PORT = {"name": "placeholder-volcano", "port": 1000, "protocol": "TCP", "targetPort": 1000}


def hosts_data(job: Mapping[str, Any]) -> dict[str, str]:
    """The ConfigMap data: per task the host list as a file and as env-style values."""
    data: dict[str, str] = {}
    for task, replicas in tasks(job):
        hosts = task_hosts(job, task)
        data[f"{task}.host"] = "\n".join(hosts)
        data[f"VC_{env_name(task)}_HOSTS"] = ",".join(hosts)
        data[f"VC_{env_name(task)}_NUM"] = str(replicas)
    return data


class SvcPlugin(JobPlugin):
    name = "svc"
    flags = {"publish-not-ready-addresses": False, "disable-network-policy": False, "inject-hosts-env": True}
    ignored = frozenset({"enable-networking"})

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        spec = pod["spec"]
        spec.setdefault("hostname", pod["metadata"]["name"])
        spec.setdefault("subdomain", job_name(job))
        add_volume(pod, {"name": f"{job_name(job)}-svc", "configMap": {"name": f"{job_name(job)}-svc"}}, CONFIG_DIR)
        if self.options["inject-hosts-env"]:
            add_env(pod, self.once("env", lambda: {k: v for k, v in hosts_data(job).items() if k.startswith("VC_")}))

    def on_job_add(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        name = job_name(job)
        selector = {JOB_NAME: name, JOB_NAMESPACE: job_namespace(job)}
        objects: list[dict[str, Any]] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": object_meta(job, f"{name}-svc"),
                "data": hosts_data(job),
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": object_meta(job, name),
                "spec": {
                    "clusterIP": "None",
                    "selector": selector,
                    "ports": [dict(PLACEHOLDER_PORT)],
                    "publishNotReadyAddresses": bool(self.options["publish-not-ready-addresses"]),
                },
            },
        ]
        if not self.options["disable-network-policy"]:
            objects.append(
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": object_meta(job, name),
                    "spec": {
                        "podSelector": {"matchLabels": selector},
                        "policyTypes": ["Ingress"],
                        "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
                    },
                }
            )
        return objects

    def on_job_update(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [obj for obj in self.on_job_add(job) if obj["kind"] == "ConfigMap"]
