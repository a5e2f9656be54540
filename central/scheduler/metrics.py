"""Scheduler metrics under Volcano's names, so existing dashboards and alerts keep working.

Names and units follow `pkg/scheduler/metrics` (milliseconds histograms, `volcano_` prefix).
Series stay bounded: labels are actions, plugins, results and queue names only (never pods
or jobs), and a queue's series are removed when the queue disappears (Volcano #4821 kept
~207k stale series). A private registry per scheduler keeps tests isolated.

`/metrics`, `/healthz` and `/readyz` are served by `serve()` on one port, the way the
Deployment's probes and Prometheus' scrape config expect them.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

if TYPE_CHECKING:
    from central.framework.faults import Fault

PREFIX = "volcano"
MS_BUCKETS = tuple(5.0 * 2**i for i in range(10))  # Volcano: ExponentialBuckets(5, 2, 10)
QUEUE_FIGURES = ("allocated", "deserved", "capacity")
QUEUE_UNITS = {"cpu": "milli_cpu", "memory": "memory_bytes"}  # anything else: scalar_resources


class SchedulerMetrics:
    def __init__(self, prefix: str = PREFIX):
        self.registry = CollectorRegistry()
        r = self.registry
        self.e2e = Histogram(f"{prefix}_e2e_scheduling_latency_milliseconds", "E2e scheduling latency in milliseconds",
                             buckets=MS_BUCKETS, registry=r)
        self.open_session = Histogram(f"{prefix}_open_session_duration_milliseconds",
                                      "Duration of opening a session in milliseconds", buckets=MS_BUCKETS, registry=r)
        self.action = Histogram(f"{prefix}_action_scheduling_latency_milliseconds", "Action scheduling latency in ms",
                                ["action"], buckets=MS_BUCKETS, registry=r)
        self.plugin = Histogram(f"{prefix}_plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in ms",
                                ["plugin", "OnSession"], buckets=MS_BUCKETS, registry=r)
        self.attempts = Counter(f"{prefix}_schedule_attempts", "Number of attempts to schedule pods, by result",
                                ["result"], registry=r)
        self.victims = Gauge(f"{prefix}_pod_preemption_victims", "Number of selected preemption victims", registry=r)
        # a Gauge only for the name: prometheus_client would append `_total` to a Counter's
        self.preemption_attempts = Gauge(f"{prefix}_total_preemption_attempts", "Total preemption attempts",
                                         registry=r)
        # Caldera's own (Volcano has none): objects faulted for bad data, cycles rolled back
        self.faults = Counter("caldera_scheduling_faults", "Objects a cycle could not use because of their data",
                              ["kind", "source"], registry=r)
        self.rolled_back = Counter("caldera_cycles_rolled_back", "Cycles that failed and were rolled back",
                                   registry=r)
        self.leader = Gauge("caldera_scheduler_leader", "1 while this replica leads and schedules", registry=r)
        self.queue: dict[tuple[str, str], Gauge] = {}
        for figure in QUEUE_FIGURES:
            for unit in ("milli_cpu", "memory_bytes"):
                self.queue[(figure, unit)] = Gauge(f"{prefix}_queue_{figure}_{unit}", f"Queue {figure} {unit}",
                                                   ["queue_name"], registry=r)
            self.queue[(figure, "scalar_resources")] = Gauge(
                f"{prefix}_queue_{figure}_scalar_resources", f"Queue {figure} scalar resources",
                ["queue_name", "resource"], registry=r)
        self._queue_series: dict[tuple[str, str, tuple[str, ...]], Any] = {}  # (figure, unit, labels) -> child

    def observe_cycle(self, e2e_ms: float, *, scheduled: int, unschedulable: int, evicted: int,
                      steps_ms: Mapping[str, float] = {}, plugin_ms: Mapping[tuple[str, str], float] = {}) -> None:
        """`steps_ms`: the cycle's timings, "open", each action by name, "close"; `plugin_ms`:
        per (plugin, OnSessionOpen|OnSessionClose), as Volcano labels them."""
        self.e2e.observe(e2e_ms)
        for step, ms in steps_ms.items():
            if step == "open":
                self.open_session.observe(ms)
            elif step != "close":
                self.action.labels(step).observe(ms)
        for (plugin, phase), ms in plugin_ms.items():
            self.plugin.labels(plugin, phase).observe(ms)
        if scheduled:
            self.attempts.labels("scheduled").inc(scheduled)
        if unschedulable:
            self.attempts.labels("unschedulable").inc(unschedulable)
        self.victims.set(evicted)
        if evicted:
            self.preemption_attempts.inc()

    def observe_faults(self, faults: Iterable[Fault]) -> None:
        """Count a cycle's faults by object kind and the plugin or action that met them."""
        for fault in faults:
            self.faults.labels(fault.kind, fault.source).inc()

    def observe_queues(self, queues: Mapping[str, Mapping[str, Mapping[str, float]]]) -> None:
        """`queues[name][figure][resource]` in Volcano's units (millicores, bytes, milli-units)."""
        series: dict[tuple[str, str, tuple[str, ...]], Any] = self._queue_series
        kept: dict[tuple[str, str, tuple[str, ...]], Any] = {}
        for name, figures in queues.items():
            for figure in QUEUE_FIGURES:
                for resource, value in (figures.get(figure) or {}).items():
                    unit = QUEUE_UNITS.get(resource, "scalar_resources")
                    labels: tuple[str, ...] = (name,) if unit != "scalar_resources" else (name, resource)
                    key = (figure, unit, labels)
                    child = series.get(key)
                    if child is None:  # labels() looks the child up under a lock: once per series, not per cycle
                        child = self.queue[(figure, unit)].labels(*labels)
                    child.set(value)
                    kept[key] = child
        for figure, unit, labels in series.keys() - kept.keys():
            self.queue[(figure, unit)].remove(*labels)
        self._queue_series = kept


class QueuePodGroupCounts:
    """`volcano_queue_pod_group_<phase>_count{queue_name}` from the Queue controller's view,
    read at scrape time (a custom collector: no state to go stale, one series per queue)."""

    PHASES = ("inqueue", "pending", "running", "unknown", "completed")

    def __init__(self, queues: Mapping[str, Mapping[str, Any]], prefix: str = PREFIX):
        self.queues, self.prefix = queues, prefix

    def collect(self) -> list[GaugeMetricFamily]:
        families = {phase: GaugeMetricFamily(f"{self.prefix}_queue_pod_group_{phase}_count",
                                             f"The number of {phase} PodGroups in this queue", labels=["queue_name"])
                    for phase in self.PHASES}
        for name, queue in list(self.queues.items()):
            status = queue.get("status") or {}
            for phase, family in families.items():
                family.add_metric([name], float(status.get(phase) or 0))
        return list(families.values())


MAX_CONNECTIONS = 16  # scrapers and probes need a handful
IO_TIMEOUT_S = 10.0  # per read or write: an idle or trickling client is dropped after this


class BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per connection, at most `max_connections` at once, every read and write timed
    out: slow or idle clients cannot pile up threads in the component they serve. Shared by
    the metrics and health servers and the admission webhook."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *,
                 max_connections: int = MAX_CONNECTIONS, io_timeout_s: float = IO_TIMEOUT_S) -> None:
        self.max_connections = max_connections
        self.slots = threading.BoundedSemaphore(max_connections)
        self.io_timeout_s = io_timeout_s
        self.refused = 0  # connections closed at accept because every slot was taken
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, peer = super().get_request()
        conn.settimeout(self.io_timeout_s)
        return conn, peer

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.refused += 1
            self.on_refused()
            self.shutdown_request(request)  # over the cap: closed at once rather than queued
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def on_refused(self) -> None:
        """Called after `refused` grew; a subclass may log it."""


def serve(registry: CollectorRegistry, port: int, ready: Callable[[], bool], host: str = "0.0.0.0", *,
          max_connections: int = MAX_CONNECTIONS, io_timeout_s: float = IO_TIMEOUT_S) -> ThreadingHTTPServer:
    """/metrics, /healthz (the process answers) and /readyz (`ready()`) on one port, in a thread."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.startswith("/metrics"):
                code, body, kind = 200, generate_latest(registry), CONTENT_TYPE_LATEST
            elif self.path.startswith("/healthz"):
                code, body, kind = 200, b"ok", "text/plain"
            elif self.path.startswith("/readyz"):
                code, body, kind = (200, b"ok", "text/plain") if ready() else (503, b"not ready", "text/plain")
            else:
                code, body, kind = 404, b"not found", "text/plain"
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = BoundedHTTPServer((host, port), Handler, max_connections=max_connections, io_timeout_s=io_timeout_s)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
