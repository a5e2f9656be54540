"""Prints how long admission and the job controller take on a large job (not a test).

    python -m central.controllers.bench [--workers 10000] [--plugins env,svc]

Figures: admission of one small job; the reconcile that creates every pod of a job with
`--workers` workers (expand_job + plugins); a steady-state reconcile with every pod running.
"""

from __future__ import annotations

import argparse
import time
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=10_000)
    parser.add_argument("--plugins", default="env,svc")
    args = parser.parse_args()
    cluster = Cluster()
    small = _job(2, ["svc"])
    start = time.perf_counter()
    for _ in range(500):
        admit(small, cluster)
    print(f"admit (defaults + validation) of a 4-pod job: {(time.perf_counter() - start) / 500 * 1e6:.0f} us")
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
