"""Job plugins for distributed-training frameworks: pytorch, tensorflow, mpi.

Each only injects what its framework reads at start-up; host names come from the svc plugin
(the webhook adds svc whenever one of these is used, and ssh for mpi):
- pytorch: MASTER_ADDR (`<job>-<master>-0.<job>`), MASTER_PORT (23456), WORLD_SIZE (master +
  worker replicas), RANK (master pods 0.., workers after the masters); with
  `--wait-master-enabled`, worker pods first run Volcano's `wait-for-master` init container
  (`--wait-master-image`, busybox:1.36.1), which polls the master's port for up to
  `--wait-master-timeout` seconds (300);
- tensorflow: TF_CONFIG = {"cluster": {role: ["host:2222", ...]}, "task": {"type", "index"}}
  for roles ps, worker, chief, evaluator (skipped when the job has a single pod);
- mpi: MPI_HOST (comma list of worker hosts) on the master pod; port 22 on every pod.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from central.controllers.jobplugins.base import JobPlugin, add_env, add_port, job_name, pod_task, task_hosts, tasks
from central.errors import InputError

# Volcano's wait-for-master script, verbatim but for the placeholders.
WAIT_FOR_MASTER = """echo "Waiting for master node {addr}:{port} to be ready..."
TIMEOUT={timeout}
ELAPSED=0
until {{ nc -z {addr} {port} || echo > /dev/tcp/{addr}/{port}; }} 2>/dev/null; do
  if [ $ELAPSED -ge $TIMEOUT ]; then
    echo "Timeout waiting for master after ${{TIMEOUT}} seconds"
    exit 1
  fi
  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${{ELAPSED}}s)"
  sleep 2
  ELAPSED=$((ELAPSED + 2))
done
echo "Master node is ready!\""""


class PytorchPlugin(JobPlugin):
    name = "pytorch"
    flags = {"master": "master", "worker": "worker", "port": "23456", "wait-master-enabled": False,
             "wait-master-timeout": "300", "wait-master-image": "busybox:1.36.1"}

    def __init__(self, args: list[Any] | None = None):
        super().__init__(args)
        timeout = self.option("wait-master-timeout")
        if not re.fullmatch(r"[+-]?[0-9]{1,10}", timeout):  # an int, as Go's flag.IntVar reads it in base 10
            raise InputError(f"spec.plugins.{self.name}",
                             f"flag --wait-master-timeout must be a number of seconds, got {json.dumps(timeout)}")

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        task, index = pod_task(pod)
        master, worker = self.option("master"), self.option("worker")
        if task not in (master, worker):
            return
        replicas = dict(tasks(job))
        masters = replicas.get(master, 0)
        rank = index if task == master else masters + index
        port = self.int_option("port")
        name = job_name(job)
        add_env(
            pod,
            {
                "MASTER_ADDR": f"{name}-{master}-0.{name}",
                "MASTER_PORT": str(port),
                "WORLD_SIZE": str(masters + replicas.get(worker, 0)),
                "RANK": str(rank),
            },
        )
        add_port(pod, "pytorchjob-port", port)
        if task == worker and self.options["wait-master-enabled"]:
            self._wait_for_master(pod, f"{name}-{master}-0.{name}", port)

    def _wait_for_master(self, pod: dict[str, Any], master: str, port: int) -> None:
        """Volcano's init container that holds a worker until the master accepts connections."""
        init = pod["spec"].setdefault("initContainers", [])
        if any(c.get("name") == "wait-for-master" for c in init):
            return
        timeout = int(self.option("wait-master-timeout"))
        script = WAIT_FOR_MASTER.format(addr=master, port=port, timeout=timeout)
        init.append({"name": "wait-for-master", "image": self.option("wait-master-image"),
                     "command": ["sh", "-c", script]})


class TensorflowPlugin(JobPlugin):
    name = "tensorflow"
    flags = {"ps": "ps", "worker": "worker", "chief": "chief", "evaluator": "evaluator", "port": "2222"}
    roles = ("ps", "worker", "chief", "evaluator")

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        if sum(replicas for _, replicas in tasks(job)) <= 1:
            return  # a single pod is not a cluster; TF_CONFIG would only confuse it
        task, index = pod_task(pod)
        by_task = {self.option(role): role for role in self.roles}
        if task not in by_task:
            return
        port = self.int_option("port")
        # The cluster part is the same for every pod: serialised once, not once per pod.
        cluster = self.once("cluster", lambda: json.dumps(self._cluster(job, port), separators=(",", ":")))
        own = json.dumps({"type": by_task[task], "index": index}, separators=(",", ":"))
        add_env(pod, {"TF_CONFIG": f'{{"cluster":{cluster},"task":{own}}}'})
        add_port(pod, "tfjob-port", port)

    def _cluster(self, job: Mapping[str, Any], port: int) -> dict[str, list[str]]:
        present = {t for t, _ in tasks(job)}
        return {
            role: [f"{h}:{port}" for h in task_hosts(job, self.option(role))]
            for role in self.roles
            if self.option(role) in present
        }


class MpiPlugin(JobPlugin):
    name = "mpi"
    flags = {"master": "master", "worker": "worker", "port": "22"}

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        task, _ = pod_task(pod)
        if task == self.option("master"):
            add_env(pod, {"MPI_HOST": self.once("hosts", lambda: ",".join(task_hosts(job, self.option("worker"))))})
        if task in (self.option("master"), self.option("worker")):
            add_port(pod, "mpijob-port", self.int_option("port"))
