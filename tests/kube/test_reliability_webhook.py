"""Admission under a mixed concurrent load stays correct and its cost per
request does not grow with the cluster (the view is updated per event, never rebuilt per
request). The latency figures come from `python -m central.bench.webhook_load`, not from a test."""

from __future__ import annotations

import json
import ssl
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import central.admission.webhook as webhook_module
from central.admission import DEFAULT_CONFIG
from central.admission.cluster import Cluster
from central.admission.webhook import ClusterView, TLSContext, WebhookServer
from tests.kube.certs import self_signed

BUILT = [0]


class CountingCluster(Cluster):
    def __post_init__(self) -> None:
        BUILT[0] += 1
        super().__post_init__()


def mix(i: int) -> tuple[str, dict, bool]:
    """(route, review, allowed?) for request i: a quarter malformed, each kind in turn."""
    bad = i % 4 == 0
    cpu = "1e999999999" if bad else "1"
    spec = {"schedulerName": "volcano",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    route, obj = [
        ("/jobs/validate", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": f"j{i}"},
                            "spec": {"queue": "q1",
                                     "tasks": [{"name": "w", "replicas": 1, "template": {"spec": spec}}]}}),
        ("/pods/validate", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec}),
        ("/podgroups/validate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": f"g{i}"}, "spec": {"queue": "q1", "minResources": {"cpu": cpu}}}),
    ][i % 3]
    return route, {"request": {"uid": str(i), "operation": "CREATE", "object": obj}}, not bad


def test_concurrent_mixed_load_is_decided_right_without_rebuilding_the_view(tmp_path, monkeypatch):
    monkeypatch.setattr(webhook_module, "Cluster", CountingCluster)
    view = ClusterView(None)
    view.apply("Queue", "ADDED", {"metadata": {"name": "q1"}, "spec": {"weight": 1}})
    for g in range(5000):
        view.apply("PodGroup", "ADDED", {"metadata": {"name": f"pg{g}", "namespace": "ns"}, "spec": {"queue": "q1"}})
    cert, key = self_signed(tmp_path)
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    context = ssl.create_default_context(cafile=cert)

    def call(i: int) -> tuple[bool, bool]:
        route, body, expected = mix(i)
        request = urllib.request.Request(f"https://localhost:{server.server_address[1]}{route}",
                                         data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            assert answer.status == 200
            return json.loads(answer.read())["response"]["allowed"], expected

    try:
        BUILT[0] = 0
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(call, range(240)))
        view.apply("PodGroup", "ADDED", {"metadata": {"name": "late", "namespace": "ns"}, "spec": {"queue": "q1"}})
        call(1)
        call(2)
    finally:
        server.shutdown()
        server.server_close()
    assert all(allowed == expected for allowed, expected in answers)
    assert BUILT[0] == 2  # once for 240 requests, once after the one change: never per request
