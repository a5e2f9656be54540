"""The e2e bench's traffic: the objects a run starts from (nodes registered as a kubelet
would, queues, HyperNodes, PodGroups), the pods' creates from many threads, and the watch
that records each bind."""

from __future__ import annotations

import http.client
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from central.bench.e2e_cases import NAMESPACE, Workload
from central.kube.client import ApiError, KubeClient
from central.kube.informer import Reflector, object_key
from central.localcluster.processes import StartError
from central.localcluster.simkubelet import SimKubelet

CREATE_THREADS = 24


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


def register_nodes(admin: KubeClient, work: Workload) -> None:
    """Nodes Ready, as a kubelet registers them; then the not-ready taint the apiserver's
    admission put on each new Node lifted (its own taints kept), as the node lifecycle
    controller does for a Ready node, and the case's labels added."""
    kubelet = SimKubelet(admin, work.nodes, workers=16)
    try:
        kubelet.register()
        list(kubelet.pool.map(lambda n: admin.merge_patch(f"/api/v1/nodes/{n.name}", {
            "metadata": {"labels": work.node_labels.get(n.name, {})}, "spec": {"taints": list(n.taints) or None}}),
                              work.nodes))
    finally:
        kubelet.pool.shutdown()


def populate(admin: KubeClient, work: Workload, say: Callable[[str], None], label: str, volcano_api: bool,
             queues_open: bool = False) -> None:
    """The namespace, the nodes, and where the Volcano API is served (`volcano_api`) the
    queues, HyperNodes and PodGroups (kube-scheduler's cluster has no such kinds). With
    `queues_open` the PodGroups wait for every queue's status to say Open (Volcano's webhook
    refuses a PodGroup in a queue its controller has not opened yet)."""
    admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    what = f", {len(work.queues)} queues, {len(work.podgroups)} PodGroups" if volcano_api else ""
    say(f"{label}: registering {len(work.nodes)} nodes{what} ...")
    register_nodes(admin, work)
    if not volcano_api:
        return
    for queue in work.queues:
        _create(admin, "/apis/scheduling.volcano.sh/v1beta1/queues", queue)
    if queues_open:
        for queue in work.queues:
            _wait_open(admin, queue["metadata"]["name"])
    for hypernode in work.hypernodes:
        _create(admin, "/apis/topology.volcano.sh/v1alpha1/hypernodes", hypernode)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda pg: admin.create(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups",
                                              pg), work.podgroups))


def _wait_open(admin: KubeClient, queue: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while (admin.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{queue}").get("status") or {}).get("state") != "Open":
        if time.monotonic() > deadline:
            raise StartError(f"queue {queue} not Open {timeout:.0f} s after its creation (Volcano's queue controller)")
        time.sleep(0.2)


def _create(admin: KubeClient, url: str, body: dict[str, Any]) -> None:
    """Create, leaving one that exists (a scheduler may make the default queue itself)."""
    try:
        admin.create(url, body)
    except ApiError as err:
        if err.code != 409:
            raise
