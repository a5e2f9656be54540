"""Prometheus exporter: /metrics from the agent's latest state, plus /healthz and /readyz.

Metrics are rendered at scrape time from what the agent already holds (no second copy of the
data), all prefixed `nodeagent_`, in base units named in the metric (`_cores`, `_bytes`,
`_ratio`, `_seconds`), with `node`, `namespace` and `pod` labels that join with
kube-state-metrics. Series are bounded: per-pod series are capped at `max_pod_series` (the
largest CPU users first), GPUs and NUMA nodes by the hardware, counters by fixed vocabularies.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from nodeagent.httpserve import BoundedHTTPServer
from nodeagent.report import numa_cpu_usage

if TYPE_CHECKING:
    from nodeagent.agent import Agent
    from nodeagent.metricsauth import MetricsAuthorizer
    from nodeagent.report import NodeSnapshot

VERSION = "0.1.0"


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"nodeagent_{name}", doc, labels=labels)


def _counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    return CounterMetricFamily(f"nodeagent_{name}", doc, labels=labels)


class AgentCollector:
    def __init__(self, agent: "Agent", max_pod_series: int) -> None:
        self.agent, self.max_pod_series = agent, max_pod_series

    def collect(self) -> Iterator[Metric]:
        agent, node = self.agent, self.agent.node_name
        layout = agent.layout
        info = _gauge("build_info", "Agent version and the cgroup layout it detected.",
                      ["node", "version", "cgroup_version", "cgroup_driver"])
        info.add_metric([node, VERSION, str(layout.version), layout.driver], 1)
        yield info
        yield from self._health(node)
        yield from self._stream(node)
        snap = agent.snapshot
        if snap is None:
            return
        usage = snap.usage
        for name, doc, value in (  # an unknown figure is left out, never exported as 0
            ("node_cpu_usage_cores", "Node CPU in use (last sample).", None if usage.cpu_cores is None else usage.cpu_cores.last),
            ("node_cpu_usage_p95_cores", "95th percentile of node CPU over the window.",
             None if usage.cpu_cores is None else usage.cpu_cores.p95),
            ("node_cpu_allocatable_cores", "CPU the agent treats as allocatable.", snap.cpu_allocatable_cores),
            ("node_memory_working_set_bytes", "Node memory in use, page cache excluded.",
             None if usage.memory_bytes is None else usage.memory_bytes.last),
            ("node_memory_allocatable_bytes", "Memory the agent treats as allocatable.", snap.memory_allocatable_bytes),
            ("batch_cpu_cores", "CPU offered to offline pods as kubernetes.io/batch-cpu (absent: usage unknown).",
             None if snap.batch_cpu_millicores is None else snap.batch_cpu_millicores / 1000),
            ("batch_memory_bytes", "Memory offered to offline pods as kubernetes.io/batch-memory (absent: unknown).",
             snap.batch_memory_bytes),
            ("be_cpu_quota_cores", "CPU quota of the offline cgroups together (0: none).",
             snap.qos.offline_cpu_quota_cores),
            ("be_memory_limit_bytes", "Memory cap of the offline cgroups together (0: none).",
             snap.qos.offline_memory_limit_bytes),
            ("node_taint_active", "1 while the offline NoSchedule taint is set.", float(snap.qos.no_schedule_taint)),
        ):
            gauge = _gauge(name, doc, ["node"])
            if value is not None:
                gauge.add_metric([node], value)
            yield gauge
        pressure = _gauge("node_pressure_ratio", "Share of time tasks stalled on a resource (PSI, avg10).",
                          ["node", "resource", "kind"])
        for resource, p in sorted(usage.pressure.items()):
            pressure.add_metric([node, resource, "some"], p.some_avg10)
            if p.full_avg10 is not None:
                pressure.add_metric([node, resource, "full"], p.full_avg10)
        yield pressure
        evicting = _gauge("eviction_pressure", "1 for each trigger calling for eviction this sample.",
                          ["node", "cause"])
        for cause in sorted(set(snap.qos.pressures)):
            evicting.add_metric([node, cause], 1)
        yield evicting
        numa_cap = _gauge("numa_memory_capacity_bytes", "Memory of a NUMA node.", ["node", "numa"])
        numa_free = _gauge("numa_memory_free_bytes", "Free memory of a NUMA node (free + file + reclaimable).",
                           ["node", "numa"])
        numa_cpus = _gauge("numa_cpus", "Online CPUs of a NUMA node.", ["node", "numa"])
        numa_used = _gauge("numa_cpu_usage_cores", "CPU in use on a NUMA node (last sample).", ["node", "numa"])
        for n in snap.topology.numa_nodes:
            numa_used.add_metric([node, str(n.id)], numa_cpu_usage(snap, n.cpus))
            numa_cap.add_metric([node, str(n.id)], n.memory_total_bytes)
            numa_free.add_metric([node, str(n.id)], n.memory_free_bytes)
            numa_cpus.add_metric([node, str(n.id)], len(n.cpus))
        yield from (numa_cap, numa_free, numa_cpus, numa_used)
        yield from self._gpus(node, snap)
        yield from self._pods(node, snap)

    def _gpus(self, node: str, snap: NodeSnapshot) -> Iterator[Metric]:
        labels = ["node", "gpu", "uuid"]
        info = _gauge("gpu_info", "One per GPU; descriptive labels.", [*labels, "model", "numa", "mig_mode"])
        total = _gauge("gpu_memory_total_bytes", "GPU memory.", labels)
        used = _gauge("gpu_memory_used_bytes", "GPU memory in use.", labels)
        util = _gauge("gpu_utilization_ratio", "GPU busy ratio (0-1); absent on MIG GPUs (unknown).", labels)
        healthy = _gauge("gpu_healthy", "1 when NVML answered for the GPU.", labels)
        pod_mem = _gauge("gpu_pod_memory_used_bytes", "GPU memory used by a pod's processes.",
                         [*labels, "namespace", "pod"])
        pods = {u.pod.uid: u.pod for u in snap.pods}
        for g in snap.gpus.gpus:
            key = [node, str(g.index), g.uuid]
            info.add_metric([*key, g.model, str(g.numa_node), str(g.mig_enabled).lower()], 1)
            total.add_metric(key, g.memory_total_bytes)
            used.add_metric(key, g.memory_used_bytes)
            healthy.add_metric(key, float(g.healthy))
            if g.utilization_ratio is not None:
                util.add_metric(key, g.utilization_ratio)
            per_pod: dict[str, int] = {}
            for p in g.processes:
                if p.pod_uid in pods:
                    per_pod[p.pod_uid] = per_pod.get(p.pod_uid, 0) + p.used_memory_bytes
            for uid, used_bytes in sorted(per_pod.items()):
                pod_mem.add_metric([*key, pods[uid].namespace, pods[uid].name], used_bytes)
        xids = _counter("gpu_xid_errors", "Critical Xid events by GPU and Xid code.", ["node", "uuid", "xid"])
        for (uuid, xid), n in sorted(getattr(self.agent.gpu, "xid_errors", {}).items()):
            xids.add_metric([node, uuid, str(xid)], n)
        yield from (info, total, used, util, healthy, pod_mem, xids)

    def _pods(self, node: str, snap: NodeSnapshot) -> Iterator[Metric]:
        labels = ["node", "namespace", "pod", "qos_level"]
        info = _gauge("pod_qos_info", "One per pod: its co-location level and Kubernetes QoS class.",
                      [*labels, "kube_qos_class"])
        cpu = _gauge("pod_cpu_usage_cores", "Pod CPU in use (window average).", labels)
        mem = _gauge("pod_memory_working_set_bytes", "Pod memory working set (last sample).", labels)
        pressure = _gauge("pod_pressure_ratio", "Share of time the pod's tasks stalled (PSI some, avg10).",
                          [*labels, "resource"])
        top = sorted(snap.pods, key=lambda u: -(u.cpu_cores.avg if u.cpu_cores else 0.0))[: self.max_pod_series]
        for u in top:
            key = [node, u.pod.namespace, u.pod.name, u.pod.qos_level]
            info.add_metric([*key, u.pod.qos_class], 1)
            if u.cpu_cores is not None:
                cpu.add_metric(key, u.cpu_cores.avg)
            if u.memory_bytes is not None:
                mem.add_metric(key, u.memory_bytes.last)
            for resource, p in sorted(u.pressure.items()):
                pressure.add_metric([*key, resource], p.some_avg10)
        yield from (info, cpu, mem, pressure)

    def _health(self, node: str) -> Iterator[Metric]:
        agent = self.agent
        errors = _counter("collector_errors", "Failures by collector and reason.", ["node", "collector", "reason"])
        for (collector, reason), n in sorted(agent.health.errors.items()):
            errors.add_metric([node, collector, reason], n)
        last = _gauge("collector_last_success_timestamp_seconds", "When each collector last succeeded.",
                      ["node", "collector"])
        for collector, ts in sorted(agent.health.last_success.items()):
            last.add_metric([node, collector], ts)
        writes = _counter("cgroup_writes", "cgroup writes by file and result.", ["node", "file", "result"])
        for (file, result), n in sorted((agent.writer.results + agent.qos.online_writer.results).items()):
            writes.add_metric([node, file, result], n)
        requests = _counter("pod_source_requests", "Requests the pod source made to the API server, by verb.",
                            ["node", "verb"])
        for verb, n in sorted(getattr(agent.pod_source, "requests", {}).items()):
            requests.add_metric([node, verb], n)
        evictions = _counter("evictions", "Offline pod evictions by pressured resource and result.",
                             ["node", "resource", "result"])
        # every (resource, result) from zero, so rates and alerts see a series before the first eviction
        counts = {(r, o): 0 for r in ("cpu", "memory") for o in ("ok", "failed")} | dict(agent.qos.eviction.results)
        for (resource, result), n in sorted(counts.items()):
            evictions.add_metric([node, resource, result], n)
        yield from (errors, last, writes, requests, evictions)

    def _stream(self, node: str) -> Iterator[Metric]:
        stream = self.agent.stream
        if stream is None:
            return
        s = stream.stats
        connected = _gauge("report_stream_connected", "1 while the report stream to the scheduler is up.", ["node"])
        connected.add_metric([node], float(s.connected))
        last = _gauge("report_last_ack_timestamp_seconds", "When the scheduler last acknowledged a report.", ["node"])
        last.add_metric([node], s.last_ack_unix_s)
        yield from (connected, last)
        for name, doc, value in (
            ("report_stream_reconnects", "Report stream reconnects.", s.reconnects),
            ("reports_sent", "Reports sent (heartbeats included).", s.sent),
            ("reports_acked", "Reports the scheduler accepted.", s.acked),
            ("reports_rejected", "Reports the scheduler refused.", s.rejected),
        ):
            counter = _counter(name, doc, ["node"])
            counter.add_metric([node], value)
            yield counter


class MetricsServer:
    """A threaded HTTP server on the configured address and port (the pod's IP in the DaemonSet:
    with hostNetwork, 0.0.0.0 would be every address of the node), bounded in connections and time."""

    def __init__(self, agent: "Agent", address: str, port: int, max_pod_series: int,
                 authorizer: "MetricsAuthorizer | None" = None) -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(AgentCollector(agent, max_pod_series))
        ProcessCollector(registry=registry)  # the agent's own process_* figures
        stale_after = max(10.0, 5 * agent.cfg.collect.period_s)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics"):
                    code, why = (200, "") if authorizer is None else authorizer.check(self.headers.get("Authorization"))
                    if code == 200:
                        body, kind = generate_latest(registry), CONTENT_TYPE_LATEST
                    else:
                        body, kind = why.encode() + b"\n", "text/plain"
                elif self.path == "/healthz":  # the loop is still ticking
                    alive = time.monotonic() - agent.last_tick <= stale_after
                    code, body, kind = (200 if alive else 503), b"ok\n" if alive else b"stalled\n", "text/plain"
                elif self.path == "/readyz":  # usage known and the node and pod sources readable
                    ready, why = agent.readiness()
                    code, body, kind = (200 if ready else 503), why.encode() + b"\n", "text/plain"
                else:
                    code, body, kind = 404, b"not found\n", "text/plain"
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = BoundedHTTPServer((address, port), Handler)
        self.port = self.httpd.server_port
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="metrics", daemon=True)

    def start(self) -> int:
        self._thread.start()
        return self.port

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
