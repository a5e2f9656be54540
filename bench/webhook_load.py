"""Admission latency under a mixed load (its p99 must stay far below the API server's 10 s
webhook timeout).

A real HTTPS webhook (`caldera webhook`'s server and handler) decides against a view holding
--podgroups PodGroups in --queues queues; --rps requests a second (Jobs, PodGroups, Queues and
pods of the scheduler, a quarter of them malformed) arrive from --clients threads for
--seconds. Prints the count, the denials and p50/p90/p99/max latency.

    python bench/webhook_load.py [--rps 50] [--seconds 20] [--podgroups 10000] [--queues 100]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import ssl
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from central.admission import DEFAULT_CONFIG  # noqa: E402
from central.kube.webhook import ClusterView, TLSContext, WebhookServer  # noqa: E402
from tests.kube.test_webhook import self_signed  # noqa: E402


def requests_mix(i: int) -> tuple[str, dict]:
    bad = i % 4 == 0
    cpu = "1e999999999" if bad else "1"
    pod_spec = {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x",
                                                            "resources": {"requests": {"cpu": cpu}}}]}
    objs = [
        ("/jobs/validate", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                            "metadata": {"name": f"j{i}", "namespace": "ns"},
                            "spec": {"queue": f"q{i % 7}", "minAvailable": 1,
                                     "tasks": [{"name": "w", "replicas": 2, "template": {"spec": pod_spec}}]}}),
        ("/pods/validate", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns"},
                            "spec": pod_spec}),
        ("/podgroups/validate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": f"pg{i}", "namespace": "ns"},
                                 "spec": {"minMember": 1, "queue": f"q{i % 7}", "minResources": {"cpu": cpu}}}),
        ("/queues/validate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                              "metadata": {"name": f"new{i}"}, "spec": {"weight": 1, "parent": "root"}}),
    ]
    route, obj = objs[i % len(objs)]
    return route, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "request": {"uid": str(i), "operation": "CREATE", "object": obj, "userInfo": {"username": "u"}}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rps", type=float, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--podgroups", type=int, default=10_000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    view = ClusterView(None)
    for q in range(args.queues):
        view.apply("Queue", "ADDED", {"metadata": {"name": f"q{q}"}, "spec": {"weight": 1}})
    for g in range(args.podgroups):
        view.apply("PodGroup", "ADDED", {"metadata": {"name": f"pg{g}", "namespace": "ns"},
                                         "spec": {"queue": f"q{g % args.queues}"}})
    with tempfile.TemporaryDirectory() as tmp:
        import pathlib
        cert, key = self_signed(pathlib.Path(tmp))
        server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        context = ssl.create_default_context(cafile=cert)
        total = int(args.rps * args.seconds)
        latencies: list[float] = []
        denied = [0]
        lock = threading.Lock()
        start = time.perf_counter()

        def client(k: int) -> None:
            for i in range(k, total, args.clients):
                due = start + i / args.rps
                time.sleep(max(0.0, due - time.perf_counter()))
                route, body = requests_mix(i)
                sent = time.perf_counter()
                req = urllib.request.Request(f"https://localhost:{server.server_address[1]}{route}",
                                             data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, context=context, timeout=15) as answer:
                    allowed = json.loads(answer.read())["response"]["allowed"]
                with lock:
                    latencies.append(time.perf_counter() - sent)
                    denied[0] += not allowed

        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        server.shutdown()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%MZ} webhook_load: {len(latencies)} requests at "
          f"{args.rps:g}/s over {args.podgroups} PodGroups in {args.queues} queues, {denied[0]} denied; "
          f"latency ms p50 {pct(0.5):.1f} p90 {pct(0.9):.1f} p99 {pct(0.99):.1f} max {latencies[-1] * 1000:.1f}")


if __name__ == "__main__":
    main()
