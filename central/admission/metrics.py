"""The admission webhook's own metrics: with `failurePolicy: Fail`, its outage or slowness
blocks every Volcano Job, Queue and PodGroup submission, so requests, latency and denials are
counted per resource. Labels stay bounded: the route's resource (jobs, queues, podgroups,
hypernodes, pods, pods/eviction), mutate or validate, the operation, never an object's name.

Served on the webhook's health port (`/metrics` next to `/healthz` and `/readyz`).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def route_labels(route: str) -> tuple[str, str]:
    """(resource, verb) of an admission route: /jobs/mutate -> (jobs, mutate),
    /pods/eviction/validate -> (pods/eviction, validate)."""
    resource, _, verb = route.strip("/").rpartition("/")
    return resource, verb


class WebhookMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("caldera_webhook_requests", "Admission requests answered, by resource, verb, "
                                "operation and whether they were allowed", ["resource", "verb", "operation", "allowed"],
                                registry=r)
        self.latency = Histogram("caldera_webhook_request_duration_seconds", "Time to answer an admission request",
                                 ["resource", "verb"], buckets=SECONDS_BUCKETS, registry=r)
        self.denials = Counter("caldera_webhook_denials", "Admission requests refused, by resource and HTTP-style "
                               "code (400 invalid, 403 forbidden, 500 internal error, 503 not ready)",
                               ["resource", "operation", "code"], registry=r)
        # every replica exports it: max() over them is what the webhook-down alert reads
        self.ready = Gauge("caldera_webhook_ready", "1 while this replica can answer (certificate usable, caches "
                           "synced, caBundle filled in)", registry=r)

    def observe(self, route: str, operation: object, response: dict[str, Any], seconds: float) -> None:
        resource, verb = route_labels(route)
        op = operation if operation in OPERATIONS else "other"
        allowed = bool(response.get("allowed"))
        self.requests.labels(resource, verb, op, str(allowed).lower()).inc()
        self.latency.labels(resource, verb).observe(seconds)
        if not allowed:
            code = (response.get("status") or {}).get("code", 0)
            self.denials.labels(resource, op, str(code)).inc()
