"""How fast the Job controller makes a job's pods, through a real API server. Prints figures only.

    python -m central.bench.pod_creation [--pods 1000] [--jobs 200] [--per-job 10] [--writers 1 32] [--workers 3]

A fresh local control plane (kube-apiserver, etcd; no scheduler, no kubelet) with Caldera's
CRDs; `caldera controllers` runs as its own process, as deployed, with --qps. For each setting
of --writers (pods written at once per job; 1 is one by one, as before), one Job of --pods
pods, then --jobs Jobs of --per-job pods: the clock runs from the moment each PodGroup is
admitted (the bench writes them Inqueue, as the scheduler's enqueue would) to the last pod
the bench's watch sees. The API server's own create rate, plain pods POSTed by 24 threads,
is printed first as the ceiling. Each line names the cores each process kept busy while its
clock ran: where they add up to the machine's, the machine is the bound, not the controller.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from central.admission.jobs import mutate_job
from central.bench.e2e_load import Creator
from central.kube.client import CORE, VOLCANO_BATCH, VOLCANO_SCHEDULING, KubeClient, path
from central.kube.informer import Reflector
from central.localcluster import build, controlplane
from central.localcluster.install import apply_crds
from central.localcluster.processes import Supervisor, free_port

CONTROLLERS = f"{controlplane.CONTROLLERS},-node-lifecycle-controller"  # no kubelet renews a Lease


@contextmanager
def control_plane(directory: Path) -> Iterator[tuple[KubeClient, str, Supervisor]]:
    sup = Supervisor(directory)
    try:
        endpoints = controlplane.start(sup, build.binaries(), controllers=CONTROLLERS)
        admin = KubeClient.connect(str(directory / "kubeconfig"), qps=5000, burst=5000)
        apply_crds(admin)
        yield admin, endpoints.apiserver, sup
    finally:
        sup.stop_all()


def job(name: str, namespace: str, pods: int) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "command": ["sleep", "infinity"],
                 "resources": {"requests": {"cpu": "10m"}}}
    return mutate_job({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": namespace},
                       "spec": {"minAvailable": pods, "queue": "default",
                                "tasks": [{"name": "w", "replicas": pods, "template": {"spec": {"containers": [container]}}}]}})


class PodCount:
    """Counts the pods of a namespace as the watch sees them; `wait(n)` returns when n exist."""

    def __init__(self, admin: KubeClient, namespace: str):
        self.seen: set[str] = set()
        self.last = 0.0
        self.cond = threading.Condition()
        self.reflector = Reflector(admin, path(CORE, "pods", namespace), self._on)
        self.reflector.start()
        self.reflector.synced.wait(30)

    def _on(self, kind: str, pod: dict[str, Any]) -> None:
        with self.cond:
            if kind != "DELETED":
                self.seen.add(pod["metadata"]["name"])
                self.last = time.monotonic()
                self.cond.notify_all()

    def wait(self, n: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.seen) >= n, timeout)


def admit_all(admin: KubeClient, namespace: str, jobs: int) -> None:
    """Write every PodGroup of the namespace Inqueue once it exists (the scheduler's enqueue)."""
    url = path(VOLCANO_SCHEDULING, "podgroups", namespace)
    done: set[str] = set()
    deadline = time.monotonic() + 120
    while len(done) < jobs and time.monotonic() < deadline:
        for pg in admin.get(url)["items"]:
            name = pg["metadata"]["name"]
            if name not in done:
                admin.merge_patch(f"{url}/{name}", {"status": {"phase": "Inqueue"}})  # no status subresource
                done.add(name)
        time.sleep(0.05)


def run(admin: KubeClient, kubeconfig: str, sup: Supervisor, namespace: str, sizes: list[int], writers: int,
        qps: float, workers: int) -> tuple[float, float, dict[str, float]]:
    """Pods per second for Jobs of `sizes` pods made by `caldera controllers` (its own
    process, as deployed) writing `writers` of a job's pods at once; the controllers' CPU
    seconds per 1,000 pods (their start-up and list included); and the cores each process
    kept busy while the clock ran (the controllers, kube-apiserver, etcd, ...)."""
    admin.create(path(CORE, "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    controllers = subprocess.Popen(
        [sys.executable, "-m", "caldera", "controllers", f"--kubeconfig={kubeconfig}", "--no-leader-elect",
         f"--kube-api-qps={qps}", f"--kube-api-burst={int(2 * qps)}", f"--pod-writers-per-job={writers}",
         f"--workers={workers}", "--listen-address=127.0.0.1", f"--listen-port={free_port()}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    count = PodCount(admin, namespace)
    try:
        for i, size in enumerate(sizes):
            admin.create(path(VOLCANO_BATCH, "jobs", namespace), job(f"j{i}", namespace, size))
        started, cpu_before = time.monotonic(), sup.cpu()
        ours_before = psutil.Process(controllers.pid).cpu_times()
        admit_all(admin, namespace, len(sizes))
        if not count.wait(sum(sizes), 600):
            print(f"  only {len(count.seen)} of {sum(sizes)} pods after 600 s")
        cpu, ended = psutil.Process(controllers.pid).cpu_times(), time.monotonic()
        busy = {"controllers": (cpu.user + cpu.system - ours_before.user - ours_before.system) / (ended - started)}
        for pid, (process, seconds) in sup.cpu().items():
            busy[process] = (seconds - cpu_before.get(pid, ("", 0.0))[1]) / (ended - started)
        return (len(count.seen) / max(count.last - started, 1e-9), (cpu.user + cpu.system) * 1000 / max(len(count.seen), 1),
                busy)
    finally:
        count.reflector.stop()
        controllers.terminate()
        controllers.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000, help="pods of the one big Job")
    parser.add_argument("--jobs", type=int, default=200, help="small Jobs")
    parser.add_argument("--per-job", type=int, default=10, help="pods of each small Job")
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 32], help="pods written at once per job")
    parser.add_argument("--workers", type=int, default=3, help="the Job controller's workers (its default)")
    parser.add_argument("--qps", type=float, default=200.0, help="the controller's client limit (its default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="caldera-pods-") as tmp, control_plane(Path(tmp)) as (admin, server, sup):
        kubeconfig = str(Path(tmp) / "kubeconfig")
        admin.create(path(CORE, "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "raw"}})
        bodies = [job("x", "raw", 1)["spec"]["tasks"][0]["template"] for _ in range(args.pods)]
        raw = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"raw-{i}"}, **b} for i, b in enumerate(bodies)]
        creator = Creator(server, Path(tmp) / "pki")
        first = creator.create_all("/api/v1/namespaces/raw/pods", [json.dumps(p).encode() for p in raw],
                                   [p["metadata"]["name"] for p in raw])
        print(f"API server: {args.pods} plain pods by 24 threads at {args.pods / (time.monotonic() - first):,.0f} pods/s")
        for writers in args.writers:
            for label, sizes in ((f"one Job of {args.pods} pods", [args.pods]),
                                 (f"{args.jobs} Jobs of {args.per_job}", [args.per_job] * args.jobs)):
                rate, per_1000, busy = run(admin, kubeconfig, sup, f"{'big' if len(sizes) == 1 else 'small'}-{writers}",
                                           sizes, writers, args.qps, args.workers)
                cores = ", ".join(f"{name} {c:.2f}" for name, c in sorted(busy.items(), key=lambda kv: -kv[1]) if c >= 0.01)
                print(f"writers {writers:>3} per job, {args.workers} job workers (client {args.qps:.0f} qps), {label}: "
                      f"{rate:,.0f} pods/s ({per_1000:.1f} CPU s per 1,000); cores busy: {cores}; "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
