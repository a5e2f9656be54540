"""`caldera bench --e2e`: pods/s through a real API server, Caldera beside kube-scheduler.

Each scheduler gets a fresh local control plane (`central.localcluster`): Caldera's as
`caldera up` installs it (webhook and scheduler as their real processes, no controllers, no
agents), kube-scheduler with its default profile as user system:kube-scheduler. Both see the
same nodes and the same pods: the session benchmark's synthetic cluster, plain pods in
PodGroups of mixed gang sizes. Nodes are registered by the bench (no kubelet runs: a bind is
the end point); the node lifecycle controller is off, since no kubelet renews a Lease, and
the bench lifts the not-ready taint a new Node gets, as that controller would for a Ready node.

The clock runs from the first pod create to the last bind the bench's watch sees; pods are
created from prepared bodies by many threads, each with its own kept-alive connection, so the
creates are not the bound (their own rate is printed); on a machine where the API server
cannot take creates faster than a scheduler binds, `--backlog` creates every pod first and
times the scheduler and its binds alone. Volcano's scheduler is not run:
`volcano.sh/volcano` is not served by the Go module proxy (403), so it cannot be built here.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from central.bench.synthetic import synthetic_cluster
from central.kube.client import KubeClient
from central.kube.informer import Reflector, object_key
from central.localcluster import build, controlplane
from central.localcluster.processes import Supervisor
from central.localcluster.simkubelet import NodeSpec, SimKubelet
from central.localcluster.up import up

NAMESPACE = "bench"
# No kubelet renews a Lease here: the node lifecycle controller would mark every node NotReady.
KCM_CONTROLLERS = controlplane.CONTROLLERS + ",-node-lifecycle-controller"
QPS = 2000  # both schedulers' client limits: Caldera's --kube-api-qps/--kube-api-burst defaults
CREATE_THREADS = 24
STALL_SECONDS = 30.0  # no bind for this long once all pods exist: the rest stays pending


@dataclass
class Workload:
    nodes: list[NodeSpec]
    queues: list[dict[str, Any]]
    podgroups: list[dict[str, Any]]
    pods: list[dict[str, Any]]


def workload(nodes: int, pods: int) -> Workload:
    """The session benchmark's cluster as API objects."""
    out = Workload([], [], [], [])
    for obj in synthetic_cluster(nodes, pods):
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Node":
            alloc = obj["status"]["allocatable"]
            out.nodes.append(NodeSpec(meta["name"], cpu=alloc["cpu"], memory=alloc["memory"],
                                      gpus=int(alloc.get("nvidia.com/gpu", 0)),
                                      taints=tuple(obj["spec"].get("taints") or ())))
        elif kind == "Queue":
            out.queues.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                               "metadata": meta, "spec": obj["spec"]})
        elif kind == "PodGroup":
            out.podgroups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                  "metadata": meta, "spec": obj["spec"]})
        elif kind == "Pod":
            for container in obj["spec"]["containers"]:  # the API wants extended resources' limits = requests
                resources = container["resources"]
                extended = {k: v for k, v in resources["requests"].items() if "/" in k}
                if extended:
                    resources["limits"] = extended
            out.pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": obj["spec"]})
    return out


class BindWatch:
    """Watches the bench namespace's pods; records when each is first seen bound, and any pod
    seen on a second node (a double bind: must never happen)."""

    def __init__(self, kube: KubeClient, expected: int):
        self.expected = expected
        self.bound: dict[str, tuple[float, str]] = {}
        self.rebound: list[str] = []
        self.done = threading.Event()
        self.reflector = Reflector(kube, f"/api/v1/namespaces/{NAMESPACE}/pods", self._on_pod)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        node = pod["spec"].get("nodeName")
        if not node or kind == "DELETED":
            return
        key = object_key(pod)
        seen = self.bound.get(key)
        if seen is None:
            self.bound[key] = (time.monotonic(), node)
            if len(self.bound) >= self.expected:
                self.done.set()
        elif seen[1] != node:
            self.rebound.append(key)


class Creator:
    """POSTs prepared pod bodies from many threads, one kept-alive TLS connection each."""

    def __init__(self, server: str, pki: Path):
        host, _, port = server.removeprefix("https://").partition(":")
        self.address = (host, int(port))
        self.context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.local = threading.local()
        self.failed: list[str] = []

    def _post(self, url: str, body: bytes) -> int:
        for attempt in range(5):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPSConnection(*self.address, context=self.context, timeout=60)
            try:
                conn.request("POST", url, body, {"Content-Type": "application/json", "Accept": "application/json"})
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                continue
            if resp.status in (429, 500, 503, 504):  # the apiserver's overload answers: try again
                time.sleep(0.05 * (attempt + 1))
                continue
            return resp.status
        return 0

    def create_all(self, url: str, bodies: list[bytes], names: list[str],
                   started: dict[str, float] | None = None) -> float:
        """Create every body; returns the monotonic time the first create started."""
        def one(i: int) -> None:
            if started is not None:
                started[names[i]] = time.monotonic()
            status = self._post(url, bodies[i])
            if status not in (200, 201, 409):
                self.failed.append(f"{names[i]}: HTTP {status}")
        first = time.monotonic()
        with ThreadPoolExecutor(CREATE_THREADS) as pool:
            list(pool.map(one, range(len(bodies))))
        return first


@dataclass
class Result:
    scheduler: str
    pods: int
    bound: int = 0
    seconds: float = 0.0
    create_seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    rebound: list[str] = field(default_factory=list)
    failed_creates: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and the end
    backlog: bool = False

    @property
    def pods_per_s(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0


def register_nodes(admin: KubeClient, nodes: list[NodeSpec]) -> None:
    """Nodes Ready, as a kubelet registers them; then the not-ready taint the apiserver's
    admission put on each new Node lifted (its own taints kept), as the node lifecycle
    controller does for a Ready node."""
    kubelet = SimKubelet(admin, nodes, workers=16)
    try:
        kubelet.register()
        list(kubelet.pool.map(lambda n: admin.merge_patch(f"/api/v1/nodes/{n.name}",
                                                                   {"spec": {"taints": list(n.taints) or None}}),
                              nodes))
    finally:
        kubelet.pool.shutdown()


def measure(name: str, admin: KubeClient, server: str, pki: Path, work: Workload, scheduler_name: str,
            timeout: float, start_scheduler: Callable[[], Any], backlog: bool) -> Result:
    """Create the pods for `scheduler_name` and wait until all are bound (or binds stall).
    Streaming: the scheduler runs first and the clock starts at the first
    create. Backlog: every pod is created first, then the scheduler started, and the clock
    runs from its start: the scheduler and its binds alone, the creates' cost kept out."""
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
    creator = Creator(server, pki)
    load_before = os.getloadavg()[0]
    first = creator.create_all(f"/api/v1/namespaces/{NAMESPACE}/pods", bodies, names, started)
    result.create_seconds = time.monotonic() - first
    if backlog:
        first = time.monotonic()
        start_scheduler()
    waiting = time.monotonic()
    while not watch.done.wait(0.5):
        last = max((t for t, _ in list(watch.bound.values())), default=waiting)
        now = time.monotonic()
        if now - max(last, waiting) > STALL_SECONDS or now - waiting > timeout:
            break
    watch.reflector.stop()
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
    return result


def _concurrently(fn: Callable[[Any], Any], items: list[Any], workers: int = 16) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, items))


def run_caldera(work: Workload, directory: Path, say: Callable[[str], None], timeout: float,
                backlog: bool) -> Result:
    cluster = up(directory, [], agents=False, controllers=False, kcm_controllers=KCM_CONTROLLERS, say=say)
    try:
        admin = KubeClient.connect(str(cluster.kubeconfig), qps=QPS, burst=QPS)
        admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        say(f"caldera: registering {len(work.nodes)} nodes, {len(work.queues)} queues, "
            f"{len(work.podgroups)} PodGroups ...")
        register_nodes(admin, work.nodes)
        for queue in work.queues:
            admin.create("/apis/scheduling.volcano.sh/v1beta1/queues", queue)
        _concurrently(lambda pg: admin.create(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups",
                                              pg), work.podgroups)
        say(f"caldera: creating {len(work.pods)} pods ...")
        start: Callable[[], Any] = lambda: None  # noqa: E731 (`up` started it)
        if backlog:  # it starts again, on the same ports, once the pods exist
            cluster.sup.stop("caldera-scheduler")
            start = lambda: cluster.start("caldera-scheduler")  # noqa: E731
        return measure("caldera", admin, cluster.server, directory / "pki", work, "volcano", timeout, start, backlog)
    finally:
        cluster.sup.stop_all()


def run_kube_scheduler(work: Workload, directory: Path, say: Callable[[str], None], timeout: float,
                       backlog: bool) -> Result:
    bins = build.binaries([*build.CONTROL_PLANE, "kube-scheduler"], progress=say)
    sup = Supervisor(directory)
    try:
        say("kube-scheduler: starting a fresh control plane ...")
        endpoints = controlplane.start(sup, bins, 0, KCM_CONTROLLERS)
        admin = KubeClient.connect(str(directory / "kubeconfig"), qps=QPS, burst=QPS)
        admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        say(f"kube-scheduler: registering {len(work.nodes)} nodes ...")
        register_nodes(admin, work.nodes)
        say(f"kube-scheduler: creating {len(work.pods)} pods ...")
        return measure("kube-scheduler", admin, endpoints.apiserver, directory / "pki", work, "default-scheduler",
                       timeout, lambda: controlplane.start_kube_scheduler(sup, bins, QPS, QPS), backlog)
    finally:
        sup.stop_all()


def report(row: Result) -> str:
    latency = ("from the scheduler's start (pods created before)" if row.backlog else
               f"create-to-bind p50 {row.p50_ms:,.0f} ms, p99 {row.p99_ms:,.0f} ms")
    lines = [f"  {row.scheduler:<15} {row.pods_per_s:8,.0f} pods/s  bound {row.bound:,}/{row.pods:,} in {row.seconds:.1f} s "
             f"{latency}; creates took {row.create_seconds:.1f} s "
             f"({row.pods / max(row.create_seconds, 1e-9):,.0f} pods/s); load {row.load[0]:.1f} -> {row.load[1]:.1f}"]
    if row.rebound:
        lines.append(f"  {row.scheduler}: {len(row.rebound)} pods seen on a second node, e.g. {row.rebound[0]}")
    if row.failed_creates:
        lines.append(f"  {row.scheduler}: {len(row.failed_creates)} creates failed, e.g. {row.failed_creates[0]}")
    return "\n".join(lines)


def run_size(nodes: int, pods: int, say: Callable[[str], None], timeout: float = 1800.0,
             schedulers: tuple[str, ...] = ("caldera", "kube-scheduler"), keep: Path | None = None,
             backlog: bool = False) -> list[Result]:
    """Both runs (see `measure` for `backlog`); their clusters' folders (logs) are kept under
    `keep` when given."""
    work = workload(nodes, pods)
    runs = {"caldera": run_caldera, "kube-scheduler": run_kube_scheduler}
    results = []
    with tempfile.TemporaryDirectory(prefix="caldera-e2e-") as tmp:
        for name in schedulers:
            results.append(runs[name](work, (keep or Path(tmp)) / name, say, timeout, backlog))
    return results


def final_line(nodes: int, pods: int, results: list[Result]) -> str:
    figures = ", ".join(f"{r.scheduler} {r.pods_per_s:.0f} pods/s" for r in results)
    return f"e2e {nodes} nodes / {pods} pods: {figures}"
