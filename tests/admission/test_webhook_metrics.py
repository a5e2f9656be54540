"""The webhook counts what it answers: requests by resource, verb, operation and outcome, their
latency, and denials by resource and code, on the registry its health port serves."""

from __future__ import annotations

import json
import ssl
import threading
import urllib.request

import pytest

from central.admission import DEFAULT_CONFIG
from central.admission.metrics import route_labels
from central.admission.webhook import ClusterView, TLSContext, WebhookServer
from central.scheduler.metrics import serve
from tests.builders import job, task
from tests.kube.certs import self_signed


@pytest.fixture
def webhook(tmp_path):
    cert, key = self_signed(tmp_path)
    view = ClusterView(None)  # no reflectors: synced, no queue but the default known
    view.apply("Queue", "ADDED", {"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    context = ssl.create_default_context(cafile=cert)

    def call(route: str, obj: dict, operation: str = "CREATE") -> dict:
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u", "operation": operation, "object": obj}}
        request = urllib.request.Request(f"https://localhost:{server.server_address[1]}{route}",
                                         data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return json.loads(answer.read())["response"]

    call.server = server
    yield call
    server.shutdown()
    server.server_close()


def sample(server: WebhookServer, name: str, **labels: str) -> float | None:
    return server.metrics.registry.get_sample_value(name, labels)


def test_requests_latency_and_denials_are_counted_by_resource(webhook):
    assert webhook("/jobs/validate", job(tasks=[task("worker")]))["allowed"] is True
    assert webhook("/jobs/validate", job(tasks=[task("worker", replicas=-1)]))["allowed"] is False
    assert webhook("/queues/mutate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                      "metadata": {"name": "q"}, "spec": {}})["allowed"] is True
    server = webhook.server
    assert sample(server, "caldera_webhook_requests_total", resource="jobs", verb="validate", operation="CREATE",
                  allowed="true") == 1
    assert sample(server, "caldera_webhook_requests_total", resource="jobs", verb="validate", operation="CREATE",
                  allowed="false") == 1
    assert sample(server, "caldera_webhook_requests_total", resource="queues", verb="mutate", operation="CREATE",
                  allowed="true") == 1
    assert sample(server, "caldera_webhook_denials_total", resource="jobs", operation="CREATE", code="400") == 1
    assert sample(server, "caldera_webhook_denials_total", resource="queues", operation="CREATE", code="400") is None
    assert sample(server, "caldera_webhook_request_duration_seconds_count", resource="jobs", verb="validate") == 2


def test_an_operation_outside_admissions_set_does_not_make_a_series_of_its_own(webhook):
    webhook("/jobs/validate", job(tasks=[task("worker")]), operation="x" * 300)
    assert sample(webhook.server, "caldera_webhook_requests_total", resource="jobs", verb="validate",
                  operation="other", allowed="true") == 1


def test_routes_name_their_resource_and_verb():
    assert route_labels("/jobs/mutate") == ("jobs", "mutate")
    assert route_labels("/pods/eviction/validate") == ("pods/eviction", "validate")


def test_the_health_port_serves_the_webhooks_metrics(webhook):
    webhook("/podgroups/validate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                    "metadata": {"name": "pg", "namespace": "ml"}, "spec": {"minMember": 1}})
    health = serve(webhook.server.metrics.registry, 0, lambda: True, host="127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{health.server_address[1]}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    finally:
        health.shutdown()
    assert 'caldera_webhook_requests_total{allowed="true",operation="CREATE",resource="podgroups",verb="validate"} 1.0' in text
