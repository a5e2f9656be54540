"""Pod events per second from a watch into the scheduler cache (target: 10,000/s).

The API stand-in runs in its own process (so it does not share our GIL) and holds N pod
creations in its event log; the adapter then watches from before them and we time the
whole path the scheduler pays per event: reading the chunked HTTP stream, JSON decoding,
the reflector's bookkeeping, the feeder's lock and `ClusterCache.apply` (parsing the pod,
charging its node).

    python -m central.bench.adapter_events [--pods 50000] [--nodes 500]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time

from central.kube.client import CORE, KubeClient, path
from central.scheduler.feeder import CacheFeeder
from central.kube.informer import Reflector
from central.model.cache import ClusterCache
from tests.kube.apiserver import ApiServer


def pod(i: int, nodes: int) -> dict:
    bound = i % 2 == 0
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"job{i // 10}-task-{i % 10}", "namespace": "default",
                         "annotations": {"scheduling.k8s.io/group-name": f"job{i // 10}"},
                         "labels": {"volcano.sh/job-name": f"job{i // 10}"}},
            "spec": {"schedulerName": "volcano", **({"nodeName": f"n{i % nodes}"} if bound else {}),
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
            "status": {"phase": "Running" if bound else "Pending"}}


def server(conn, pods: int, nodes: int) -> None:
    with ApiServer() as api:
        kubeconfig = api.kubeconfig(os.path.join(tempfile.mkdtemp(), "kubeconfig"))
        conn.send(kubeconfig)
        conn.recv()  # the adapter has listed: now fill the event log
        with api.store.lock:
            for i in range(pods):
                api.store.create("pods", "default", pod(i, nodes))
        conn.send("ready")
        conn.recv()  # done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--nodes", type=int, default=500)
    args = parser.parse_args()
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=server, args=(child, args.pods, args.nodes), daemon=True)
    proc.start()
    kube = KubeClient.connect(parent.recv(), qps=1e6, burst=1_000_000)
    cache = ClusterCache()
    feeder = CacheFeeder(cache)
    for n in range(args.nodes):
        feeder.on_event("ADDED", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{n}"},
                                  "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}})
    since = kube.get(path(CORE, "pods"))["metadata"]["resourceVersion"]
    parent.send("fill")
    parent.recv()
    reflector = Reflector(kube, path(CORE, "pods"), feeder.handler("Pod"))
    reflector.resource_version = since  # watch from before the pods: every one arrives as an event
    start_events = feeder.events
    started = time.perf_counter()
    reflector.start()
    while feeder.events - start_events < args.pods:
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    reflector.stop()
    parent.send("done")
    proc.join(5)
    print(f"{args.pods} pod events in {elapsed:.2f} s: {args.pods / elapsed:,.0f} events/s "
          f"({len(cache.tasks)} tasks in the cache, {feeder.rejected} rejected)")


if __name__ == "__main__":
    main()
