"""`caldera bench --e2e`: pods/s through a real API server, Caldera beside Volcano and kube-scheduler.

Each scheduler gets a fresh local control plane (`central.localcluster`): Caldera's as
`caldera up` installs it (webhook and scheduler as their real processes, no controllers, no
agents); Volcano's the same cluster with Volcano installed in Caldera's place (`e2e_volcano`,
skipped with a line saying why where its build is not cached); kube-scheduler with its default
profile as user system:kube-scheduler. All see the same nodes and objects (`e2e_cases`: the
session benchmark's mixed cluster or one of Volcano's benchmark cases; kube-scheduler gets
the pods alone, a gang's pods as plain pods). Nodes are registered by the bench, as a kubelet
would (no kubelet and no KWOK runs: a bind is the end point); the node lifecycle controller is
off, since no kubelet renews a Lease, and the bench lifts the not-ready taint a new Node gets,
as that controller would for a Ready node.

The clock runs from the first pod create to the last bind the bench's watch sees; pods are
created from prepared bodies by many threads, each with its own kept-alive connection, so the
creates are not the bound (their own rate is printed); on a machine where the API server
cannot take creates faster than a scheduler binds, `--backlog` creates every pod first and
times the scheduler and its binds alone. Each API server keeps an audit log (`e2e_audit`):
the requests each scheduler made per bound pod, and the server's pod creates/s and binds/s.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from central.bench import e2e_audit, e2e_volcano
from central.bench.e2e_cases import MIXED, NAMESPACE, Workload, workload
from central.bench.e2e_load import BindWatch, Creator, populate
from central.kube.client import KubeClient
from central.localcluster import build, controlplane
from central.localcluster.processes import Supervisor
from central.localcluster.up import up

# No kubelet renews a Lease here: the node lifecycle controller would mark every node NotReady.
KCM_CONTROLLERS = controlplane.CONTROLLERS + ",-node-lifecycle-controller"
QPS = 2000  # both schedulers' client limits: Caldera's --kube-api-qps/--kube-api-burst defaults
STALL_SECONDS = 30.0  # no bind for this long once all pods exist: the rest stays pending


@dataclass
class Result:
    scheduler: str
    pods: int
    bound: int = 0
    seconds: float = 0.0
    create_seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    rebound: list[str] = field(default_factory=list)
    failed_creates: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and the end
    backlog: bool = False
    requests: e2e_audit.Requests = field(default_factory=e2e_audit.Requests)
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds while the clock ran

    @property
    def pods_per_s(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Run:
    """What every scheduler's run shares: the objects, where its cluster lives, the limits."""

    work: Workload
    directory: Path
    say: Callable[[str], None]
    timeout: float
    backlog: bool

    @property
    def audit(self) -> Path:
        return self.directory / "audit"


def measure(name: str, admin: KubeClient, server: str, run: Run, scheduler_name: str,
            start_scheduler: Callable[[], Any], sup: Supervisor, clients: str = "") -> Result:
    """Create the pods for `scheduler_name` and wait until all are bound (or binds stall).
    Streaming: the scheduler runs first and the clock starts at the first
    create. Backlog: every pod is created first, then the scheduler started, and the clock
    runs from its start: the scheduler and its binds alone, the creates' cost kept out.
    `clients`: whose requests the audit log is read for (default: `name`'s). The CPU each of
    `sup`'s processes used while the clock ran says which one bounds the rate."""
    work, backlog = run.work, run.backlog
    result = Result(name, len(work.pods), backlog=backlog)
    if not backlog:
        start_scheduler()
    names = [p["metadata"]["name"] for p in work.pods]
    bodies = [json.dumps({**p, "spec": dict(p["spec"], schedulerName=scheduler_name)}).encode() for p in work.pods]
    watch = BindWatch(admin, len(bodies))
    watch.reflector.start()
    while not watch.reflector.synced.wait(0.1):
        pass
    started: dict[str, float] = {}
    creator = Creator(server, run.directory / "pki")
    load_before = os.getloadavg()[0]
    run.say(f"{name}: creating {len(work.pods):,} pods ...")
    cpu_before = sup.cpu()
    first = creator.create_all(f"/api/v1/namespaces/{NAMESPACE}/pods", bodies, names, started)
    result.create_seconds = time.monotonic() - first
    if backlog:
        cpu_before = sup.cpu()
        first = time.monotonic()
        start_scheduler()
    waiting = time.monotonic()
    while not watch.done.wait(0.5):
        last = max((t for t, _ in list(watch.bound.values())), default=waiting)
        now = time.monotonic()
        if now - max(last, waiting) > STALL_SECONDS or now - waiting > run.timeout:
            break
    watch.reflector.stop()
    for pid, (process, seconds) in sup.cpu().items():  # one started after the clock counts from its start
        result.cpu[process] = result.cpu.get(process, 0.0) + seconds - cpu_before.get(pid, ("", 0.0))[1]
    result.load = (load_before, os.getloadavg()[0])
    bound = dict(watch.bound)
    result.bound = len(bound)
    result.rebound = list(watch.rebound)
    result.failed_creates = list(creator.failed)
    if bound:
        result.seconds = max(t for t, _ in bound.values()) - first
    if bound and not backlog:
        latency = np.array([(t - started[k.split("/", 1)[1]]) * 1e3 for k, (t, _) in bound.items()])
        result.p50_ms, result.p99_ms = float(np.percentile(latency, 50)), float(np.percentile(latency, 99))
        result.max_ms = float(latency.max())
    result.requests = e2e_audit.read(run.audit / e2e_audit.LOG, e2e_audit.CLIENTS[clients or name], NAMESPACE)
    return result


def caldera_plane(run: Run) -> Any:
    return up(run.directory, [], agents=False, controllers=False, kcm_controllers=KCM_CONTROLLERS, say=run.say,
              apiserver_args=e2e_audit.apiserver_args(run.audit))


def run_caldera(run: Run) -> Result:
    cluster = caldera_plane(run)
    try:
        admin = KubeClient.connect(str(cluster.kubeconfig), qps=QPS, burst=QPS)
        populate(admin, run.work, run.say, "caldera", volcano_api=True)
        start: Callable[[], Any] = lambda: None  # noqa: E731 (`up` started it)
        if run.backlog:  # it starts again, on the same ports, once the pods exist
            cluster.sup.stop("caldera-scheduler")
            start = lambda: cluster.start("caldera-scheduler")  # noqa: E731
        return measure("caldera", admin, cluster.server, run, "volcano", start, cluster.sup)
    finally:
        cluster.sup.stop_all()


def run_volcano(run: Run) -> Result:
    cluster = caldera_plane(run)
    try:
        start = e2e_volcano.install(cluster, run.say, scheduler=not run.backlog)
        admin = KubeClient.connect(str(cluster.kubeconfig), qps=QPS, burst=QPS)
        populate(admin, run.work, run.say, "volcano", volcano_api=True, queues_open=True)
        return measure("volcano", admin, cluster.server, run, "volcano", start, cluster.sup)
    finally:
        cluster.sup.stop_all()


def run_kube_scheduler(run: Run) -> Result:
    bins = build.binaries([*build.CONTROL_PLANE, "kube-scheduler"], progress=run.say)
    sup = Supervisor(run.directory)
    try:
        run.say("kube-scheduler: starting a fresh control plane ...")
        endpoints = controlplane.start(sup, bins, 0, KCM_CONTROLLERS, apiserver_args=e2e_audit.apiserver_args(run.audit))
        admin = KubeClient.connect(str(run.directory / "kubeconfig"), qps=QPS, burst=QPS)
        populate(admin, run.work, run.say, "kube-scheduler", volcano_api=False)
        return measure("kube-scheduler", admin, endpoints.apiserver, run, "default-scheduler",
                       lambda: controlplane.start_kube_scheduler(sup, bins, QPS, QPS), sup)
    finally:
        sup.stop_all()


RUNNERS: dict[str, Callable[[Run], Result]] = {
    "caldera": run_caldera, "volcano": run_volcano, "kube-scheduler": run_kube_scheduler}
SCHEDULERS = tuple(RUNNERS)


def report(row: Result) -> str:
    latency = ("from the scheduler's start (pods created before)" if row.backlog else
               f"create-to-bind p50 {row.p50_ms:,.0f} ms, p99 {row.p99_ms:,.0f} ms, max {row.max_ms:,.0f} ms")
    lines = [f"  {row.scheduler:<15} {row.pods_per_s:8,.0f} pods/s  bound {row.bound:,}/{row.pods:,} in {row.seconds:.1f} s "
             f"{latency}; creates took {row.create_seconds:.1f} s "
             f"({row.pods / max(row.create_seconds, 1e-9):,.0f} pods/s); load {row.load[0]:.1f} -> {row.load[1]:.1f}"]
    lines += [f"    {line}" for line in e2e_audit.summary(row.requests, row.bound)]
    lines.append(f"    API server (audit log): {row.requests.creates_per_s:,.0f} pod creates/s, "
                 f"{row.requests.binds_per_s:,.0f} binds/s")
    if row.cpu and row.seconds:
        busiest = sorted(row.cpu.items(), key=lambda kv: -kv[1])
        lines.append(f"    CPU while the clock ran ({row.seconds:.0f} s on {os.cpu_count()} cores, in cores busy): "
                     + ", ".join(f"{process} {seconds / row.seconds:.2f}" for process, seconds in busiest))
    if row.rebound:
        lines.append(f"  {row.scheduler}: {len(row.rebound)} pods seen on a second node, e.g. {row.rebound[0]}")
    if row.failed_creates:
        lines.append(f"  {row.scheduler}: {len(row.failed_creates)} creates failed, e.g. {row.failed_creates[0]}")
    return "\n".join(lines)


def run_size(nodes: int, pods: int, say: Callable[[str], None], timeout: float = 1800.0,
             schedulers: tuple[str, ...] = ("caldera", "kube-scheduler"), keep: Path | None = None,
             backlog: bool = False, case: str = MIXED) -> list[Result]:
    """One run per scheduler of `case` at this size (see `measure` for `backlog`); their
    clusters' folders (logs, audit logs) are kept under `keep` when given."""
    work = workload(nodes, pods, case)
    results = []
    with tempfile.TemporaryDirectory(prefix="caldera-e2e-") as tmp:
        for name in schedulers:
            results.append(RUNNERS[name](Run(work, (keep or Path(tmp)) / name, say, timeout, backlog)))
    return results


def final_line(nodes: int, pods: int, results: list[Result], case: str = MIXED) -> str:
    figures = ", ".join(f"{r.scheduler} {r.pods_per_s:.0f} pods/s" for r in results)
    return f"e2e {nodes} nodes / {pods} pods, {case}: {figures}"
