"""The agent loop: sample, enforce QoS, publish (stream and /metrics) once per period.

Everything runs on one thread except the report stream (its own thread, fed through the
stream's single pending slot), the API-server pod watch and the metrics server (reads the
latest snapshot). A failing collector or pod source degrades that part of the report and
fails /readyz; the loop itself never stops on one. Nothing reaches the stream before node
usage is known (two samples), so a restarted agent never reports an idle node.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from nodeagent.cgroup.driver import CgroupWriter, open_driver
from nodeagent.cgroup.layout import detect_layout
from nodeagent.collect.gpu import NullGpuCollector, open_gpu_collector
from nodeagent.collect.kubelet import KubeletCpuState, read_kubelet_cpu_state
from nodeagent.collect.node_usage import NodeUsageCollector
from nodeagent.collect.pod_usage import PodUsageCollector
from nodeagent.collect.topology import Topology, read_topology
from nodeagent.config import AgentConfig
from nodeagent.health import Health
from nodeagent.host.paths import HostPaths
from nodeagent.kube import KubeApi
from nodeagent.oversubscription import BatchEstimator
from nodeagent.pods import HttpPodSource, PodInfo, PodSource, StaticPodSource
from nodeagent.podwatch import WatchPodSource
from nodeagent.qos.cpuset import CpusetPinner
from nodeagent.qos.manager import QosManager, online_usage
from nodeagent.report import NodeSnapshot, QosState, sections
from nodeagent.stream import ReportStream, TlsFiles

log = logging.getLogger("nodeagent")


class NoKubeApi:
    """Stands in when no API server is configured: the eviction strategy counts the failures."""

    def evict(self, namespace: str, name: str) -> None:
        raise RuntimeError("no API server configured (kube.api_url)")

    def set_taint(self, key: str, effect: str, present: bool) -> None:
        raise RuntimeError("no API server configured (kube.api_url)")


def _existing(path: str) -> Path | None:
    return Path(path) if path and Path(path).exists() else None


def _pod_source(cfg: AgentConfig, node_name: str) -> PodSource:
    level = cfg.qos.default_level
    if cfg.pods.source == "kubelet":
        return HttpPodSource(cfg.pods.kubelet_url, _existing(cfg.kube.token_file), level,
                             _existing(cfg.pods.kubelet_ca_file))
    if cfg.pods.source == "apiserver":
        return WatchPodSource(cfg.kube.api_url, node_name, _existing(cfg.kube.token_file),
                              _existing(cfg.kube.ca_file), level)
    return StaticPodSource()


ESSENTIAL = ("node_usage", "pods", "pod_usage")  # /readyz fails while one of these cannot be read


def _kube(cfg: AgentConfig, node_name: str) -> Any:
    if not cfg.kube.api_url:
        return NoKubeApi()
    return KubeApi(cfg.kube.api_url, node_name, _existing(cfg.kube.token_file), _existing(cfg.kube.ca_file))


class Agent:
    def __init__(self, cfg: AgentConfig, *, pod_source: PodSource | None = None, nvml: Any = None,
                 kube: Any = None, health: Health | None = None) -> None:
        self.cfg = cfg
        self.health = health or Health()
        self.node_name = cfg.node.name or os.environ.get("NODE_NAME") or socket.gethostname()
        p = cfg.paths
        self.paths = HostPaths(Path(p.sys_root), Path(p.proc_root), Path(p.cgroup_root), Path(p.kubelet_root))
        self.layout = detect_layout(self.paths.cgroup_root, p.cgroup_version or None, p.cgroup_driver or None)
        self.writer = CgroupWriter(self.health)
        self.driver = open_driver(self.layout, self.writer)
        window = max(1, round(cfg.collect.window_s / cfg.collect.period_s))
        self.node_usage = NodeUsageCollector(self.paths, self.health, window)
        self.pod_usage = PodUsageCollector(self.driver, window)
        self.gpu = (open_gpu_collector(self.paths, self.health, nvml, cfg.collect.gpu_xid_recovery_s)
                    if cfg.collect.gpu else NullGpuCollector())
        self.pod_source = pod_source or _pod_source(cfg, self.node_name)
        kube = kube or _kube(cfg, self.node_name)
        self.qos = QosManager(cfg.qos, self.driver, self.writer, kube, kube)
        self.pinner = CpusetPinner(self.layout, CgroupWriter(self.health))
        self.stream = self._stream() if cfg.stream.server else None
        self.snapshot: NodeSnapshot | None = None
        self.last_tick = time.monotonic()
        self._pods: list[PodInfo] = []
        self._topology = Topology()
        self._kubelet = KubeletCpuState()
        self._batch = BatchEstimator(cfg.qos.batch_ratio_percent, cfg.qos.batch_samples)
        self._topology_at = float("-inf")

    def _stream(self) -> ReportStream:
        s = self.cfg.stream
        tls = None if s.insecure else TlsFiles(Path(s.ca_file), Path(s.cert_file) if s.cert_file else None,
                                               Path(s.key_file) if s.key_file else None, s.server_name)
        return ReportStream(s.server, self.node_name, tls=tls, token_file=Path(s.token_file) if s.token_file else None,
                            heartbeat_s=s.heartbeat_s,
                            backoff_base_s=s.backoff_base_s, backoff_max_s=s.backoff_max_s,
                            max_in_flight=s.max_in_flight, deadband_percent=s.deadband_percent)

    def _current_pods(self) -> list[PodInfo]:
        try:
            self._pods = self.pod_source.pods()
            self.health.ok("pods")
        except Exception as exc:  # kubelet down, bad JSON, token missing: keep the last list
            self.health.error("pods", "source_failed", exc)
        return self._pods

    def tick(self, enforce: bool = True) -> NodeSnapshot:
        now = time.monotonic()
        self.node_usage.sample(now)
        self.pod_usage.sample(self._current_pods(), now)
        if now - self._topology_at >= self.cfg.collect.topology_period_s:
            self._topology, self._topology_at = read_topology(self.paths, self.health), now
            p = self.cfg.paths
            self._kubelet = read_kubelet_cpu_state(
                self.paths.kubelet_root if p.kubelet_root else None, self.health,
                socket=Path(p.pod_resources_socket) if p.pod_resources_socket else None,
                online_cpus=self._topology.online_cpus, topology_manager_policy=self.cfg.node.topology_manager_policy)
        usage = self.node_usage.usage()
        capacity = float(len(self._topology.online_cpus) or os.cpu_count() or 1)
        alloc_cpu = max(0.0, capacity - self.cfg.node.reserved_cpu_cores)
        alloc_mem = max(0, usage.memory_total_bytes - self.cfg.node.reserved_memory_bytes)
        pods = self.pod_usage.usage()
        qos = QosState(dry_run=self.cfg.qos.eviction.dry_run)
        if enforce and self.cfg.qos.enabled:
            qos = self.qos.run(alloc_cpu, alloc_mem, usage, pods)
        if enforce:
            self.pinner.run(self._pods, self._kubelet, self._topology.online_cpus)  # fetched above
        batch_cpu, batch_mem = self._batch.update(alloc_cpu, alloc_mem, *online_usage(usage, pods, lambda s: s.avg))
        self.snapshot = NodeSnapshot(capacity, alloc_cpu, alloc_mem, usage, self._topology,
                                     self.gpu.collect(), pods, qos, self._kubelet, batch_cpu, batch_mem)
        self.last_tick = time.monotonic()
        if self.stream is not None and self.snapshot.usage_known:  # never a zero priming sample
            self.stream.offer(sections(self.snapshot))
        return self.snapshot

    def readiness(self) -> tuple[bool, str]:
        """Ready once node usage is known and while the node and pod sources can be read."""
        failing = [f"{c} ({self.health.failing[c]})" for c in ESSENTIAL if c in self.health.failing]
        if failing:
            return False, "failing: " + ", ".join(failing)
        if self.snapshot is None or not self.snapshot.usage_known:
            return False, "starting: no usage sample yet"
        if self.stream is not None and self.stream.stats.refused:  # a token for another node, say
            return False, "the scheduler refuses this agent: " + self.stream.stats.refused
        return True, "ready"

    def run(self, stop: threading.Event) -> None:
        """The loop until `stop`; `caldera agent` serves the metrics around it (the exporter
        reads the agent, so the agent does not start it)."""
        threads = []
        if self.stream is not None:
            threads.append(threading.Thread(target=self.stream.run, args=(stop,), name="report-stream", daemon=True))
            threads[-1].start()
        period = self.cfg.collect.period_s
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    self.tick()
                except Exception:  # a bug in one tick must not kill the DaemonSet pod's loop
                    log.exception("agent tick failed")
                    self.health.error("agent", "tick_failed")
                stop.wait(max(0.0, period - (time.monotonic() - started)))
        finally:
            stop.set()
            self.qos.release()
            close = getattr(self.pod_source, "close", None)
            if close is not None:
                close()
            for thread in threads:
                thread.join(timeout=5)
