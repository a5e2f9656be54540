"""Prints how long admission and the job controller take (not a test).

    python -m central.bench.job_controller [--workers 10000] [--plugins env,svc] [--tasks 10] [--rounds 300]

Figures: admission of one small job; CPU time of one reconcile at each step of a job with
`--tasks` tasks of 2 pods (a new job, the PodGroup enqueued, its pods running, steady), the
least of three runs of `--rounds` each (the job object is the same between calls, as in the
loop's cache and the simulator); the reconcile that creates every pod of a job with
`--workers` workers; a steady-state reconcile of that job with every pod running.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from central.admission import Cluster, admit
from central.admission.jobs import mutate_job
from central.controllers.jobs import reconcile


def _job(workers: int, plugins: list[str]) -> dict[str, Any]:
    template = {
        "spec": {
            "containers": [
                {"name": "main", "image": "train:1", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ]
        }
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "big", "namespace": "ml", "uid": "u"},
        "spec": {
            "tasks": [
                {"name": "ps", "replicas": 2, "template": template},
                {"name": "worker", "replicas": workers, "template": template},
            ],
            "plugins": {p: [] for p in plugins if p},
        },
    }


def _cpu_per_call(call: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(rounds):
            call()
        best = min(best, (time.process_time() - start) / rounds)
    return best


def _steps(tasks: int, plugins: list[str], rounds: int) -> None:
    job = mutate_job(_job(2, plugins))
    job["spec"]["tasks"] = [dict(job["spec"]["tasks"][1], name=f"t{i}", replicas=2, minAvailable=2)
                            for i in range(tasks)]
    job["spec"]["minAvailable"] = 2 * tasks
    job["metadata"]["generation"] = 1
    podgroup: dict[str, Any] | None = None
    pods: list[dict[str, Any]] = []
    for label in ("new job (creates the PodGroup)", f"PodGroup Inqueue (creates {2 * tasks} pods)",
                  "its pods started (-> Running)", "steady, every pod running"):
        decision = reconcile(job, podgroup, pods, 0.0)
        cpu = _cpu_per_call(lambda: reconcile(job, podgroup, pods, 0.0), rounds)
        print(f"reconcile of a {tasks}-task job, {label}: {cpu * 1e6:.0f} us CPU")
        job["status"] = decision.status
        if decision.create_podgroup is not None:
            podgroup = dict(decision.create_podgroup, status={"phase": "Inqueue"})
        if decision.create_pods:
            pods = [dict(p, status={"phase": "Running"}) for p in decision.create_pods]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=10_000)
    parser.add_argument("--plugins", default="env,svc")
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    cluster = Cluster()
    small = _job(2, ["svc"])
    start = time.perf_counter()
    for _ in range(500):
        admit(small, cluster)
    print(f"admit (defaults + validation) of a 4-pod job: {(time.perf_counter() - start) / 500 * 1e6:.0f} us")
    _steps(args.tasks, args.plugins.split(","), args.rounds)
    job = mutate_job(_job(args.workers, args.plugins.split(",")))
    podgroup = reconcile(job, None, [], 0.0).create_podgroup
    assert podgroup is not None
    podgroup["status"] = {"phase": "Inqueue"}
    start = time.perf_counter()
    decision = reconcile(job, podgroup, [], 0.0)
    elapsed = time.perf_counter() - start
    print(f"reconcile creating {len(decision.create_pods)} pods (plugins {args.plugins}): {elapsed:.3f} s")
    for pod in decision.create_pods:
        pod["status"] = {"phase": "Running"}
    job["status"] = decision.status
    start = time.perf_counter()
    reconcile(job, podgroup, decision.create_pods, 0.0)
    print(f"steady-state reconcile of {len(decision.create_pods)} running pods: {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
