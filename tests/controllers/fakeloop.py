"""A minimal in-memory loop around the pure job controller, for multi-step scenario tests.

It applies a JobDecision the way the Kubernetes loop does (create/delete pods, PodGroup and
objects, write status) so tests can then play the kubelet and the scheduler by hand.
"""

from __future__ import annotations

import copy
from typing import Any

from central.admission.jobs import mutate_job
from central.controllers.job_policies import OUT_OF_SYNC, format_time
from central.controllers.jobs import JobDecision, reconcile

T0 = 1_800_000_000.0


class FakeCluster:
    def __init__(self, job: dict[str, Any], graceful: bool = False):
        self.job = mutate_job(job)
        self.job["metadata"].setdefault("uid", "uid-1")
        self.podgroup: dict[str, Any] | None = None
        self.pods: dict[str, dict[str, Any]] = {}
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.commands: list[dict[str, Any]] = []
        self.graceful = graceful  # deleted pods linger with a deletionTimestamp until `gone()`
        self.now = T0
        self.deleted_job = False
        self.last = JobDecision()

    @property
    def phase(self) -> str:
        return str(self.job.get("status", {}).get("state", {}).get("phase"))

    @property
    def status(self) -> dict[str, Any]:
        return self.job.get("status", {})

    def step(self, advance: float = 0.0) -> JobDecision:
        self.now += advance
        given = copy.deepcopy((self.job, self.podgroup, list(self.pods.values()), self.commands))
        decision = reconcile(given[0], given[1], given[2], self.now, given[3])
        assert given == (self.job, self.podgroup, list(self.pods.values()), self.commands), "reconcile edited its input"
        self.apply(decision)
        self.last = decision
        return decision

    def settle(self, steps: int = 6) -> None:
        """Run steps while they keep asking to be run again at once."""
        for _ in range(steps):
            if self.step().requeue_after != 0.0:
                return

    def apply(self, d: JobDecision) -> None:
        for name in d.delete_pods:
            if self.graceful:  # marked first, as the kube adapter does
                self.pods[name]["metadata"].setdefault("annotations", {})[OUT_OF_SYNC] = "true"
                self.pods[name]["metadata"]["deletionTimestamp"] = format_time(self.now)
            else:
                del self.pods[name]
        for pod in d.create_pods:
            assert pod["metadata"]["name"] not in self.pods, "pod created twice"
            pod = copy.deepcopy(pod)
            pod["metadata"]["creationTimestamp"] = format_time(self.now)
            self.pods[pod["metadata"]["name"]] = pod
        if d.delete_podgroup:
            self.podgroup = None
        if d.create_podgroup:
            assert self.podgroup is None, "PodGroup created twice"
            self.podgroup = copy.deepcopy(d.create_podgroup)
        for kind, name in d.delete_objects:
            self.objects.pop((kind, name), None)
        for obj in d.create_objects:
            self.objects[(obj["kind"], obj["metadata"]["name"])] = obj
        self.commands = [c for c in self.commands if c["metadata"]["name"] not in d.delete_commands]
        if d.status_changed:
            self.job["status"] = copy.deepcopy(d.status)
        self.deleted_job = self.deleted_job or d.delete_job

    # --- playing the scheduler and the kubelet ---------------------------------------------

    def enqueue(self) -> None:
        assert self.podgroup is not None
        self.podgroup.setdefault("status", {})["phase"] = "Inqueue"

    def set_phase(self, phase: str, *names: str, exit_code: int | None = None, reason: str | None = None) -> None:
        for name in names or tuple(self.pods):
            pod = self.pods[name]
            pod["status"] = {"phase": phase}
            if reason:
                pod["status"]["reason"] = reason
            if exit_code is not None:
                pod["status"]["containerStatuses"] = [
                    {
                        "name": "main",
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": exit_code, "finishedAt": format_time(self.now)}},
                    }
                ]

    def gone(self) -> None:
        """Graceful deletions complete."""
        self.pods = {n: p for n, p in self.pods.items() if not p["metadata"].get("deletionTimestamp")}

    def start(self) -> None:
        """From a new job to all pods running."""
        self.step()
        self.enqueue()
        self.step()
        self.set_phase("Running")
        self.step()
