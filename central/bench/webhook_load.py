"""Admission latency under a mixed load (its p99 must stay far below the API server's 10 s
webhook timeout).

A real HTTPS webhook (`caldera webhook`'s server and handler) decides against a view holding
--podgroups PodGroups in --queues queues; --rps requests a second (Jobs, PodGroups, Queues and
pods of the scheduler, a quarter of them malformed) arrive from --clients threads for
--seconds. Prints the count, the denials and p50/p90/p99/max latency.

    python -m central.bench.webhook_load [--rps 50] [--seconds 20] [--podgroups 10000] [--queues 100]
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import ssl
import tempfile
import threading
import time
import urllib.request
from typing import Any

from central.admission import DEFAULT_CONFIG
from central.admission.webhook import ClusterView, TLSContext, WebhookServer
from central.certs.issue import ServingRequest, issue_serving, new_ca


def requests_mix(i: int) -> tuple[str, dict[str, Any]]:
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


def _serving_files(folder: pathlib.Path) -> tuple[str, str]:
    """A CA and a localhost serving pair it signs, as files; the clients trust the CA."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = new_ca("caldera-bench-ca", now)
    pair = issue_serving(ca, ServingRequest("localhost", dns_names=("localhost",)), now)
    (folder / "ca.crt").write_bytes(ca.cert_pem)
    (folder / "tls.crt").write_bytes(pair.cert_pem)
    (folder / "tls.key").write_bytes(pair.key_pem)
    return str(folder / "tls.crt"), str(folder / "tls.key")


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
        cert, key = _serving_files(pathlib.Path(tmp))
        server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        context = ssl.create_default_context(cafile=str(pathlib.Path(tmp) / "ca.crt"))
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
