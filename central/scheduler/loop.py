"""The scheduler process: reflectors feed the cache, the leader runs a cycle every period
(sooner when a new pod arrives: `Scheduler._wait_for_work`).

Order of start-up, each step a guard from Volcano's bug history:
1. reflectors for Nodes, Pods, PodGroups, Queues, PriorityClasses, HyperNodes, ResourceQuotas,
   PodDisruptionBudgets and the storage objects (PersistentVolumeClaims, PersistentVolumes,
   StorageClasses, CSINodes) and the DRA objects (DeviceClasses, ResourceSlices, ResourceClaims,
   ResourceClaimTemplates) start and list; a cluster that does not serve resource.k8s.io/v1
   counts as having none of the DRA objects (`OPTIONAL`);
2. no cycle runs before every one of them has synced (Volcano #1417);
3. the replica takes the Lease (Volcano #2825: two schedulers double-book nodes); a standby keeps
   its cache warm meanwhile, so a hand-over costs one retry period, not a re-list;
4. the leader creates the `root` and `default` queues while they are missing, retrying with
   backoff when refused (the admission webhook may not serve yet);
5. every period: the agents' changed reports (NUMA, GPUs, usage, batch resources) go into
   the cache, then the cycle runs under the feeder's lock on the live cache and hands its
   decisions to the `KubeSink`; statuses go at session close to the sink's own status lane,
   which the loop does not wait for. Objects whose data
   the cycle could not use get Warning Events and are counted; a cycle that fails (a bug)
   has rolled the cache back before the error reaches this loop, which logs it, counts it
   and runs the next cycle on the clean cache.
With `native_podgroups`, Kubernetes' own PodGroups (`scheduling.k8s.io/v1beta1`) are watched
too and read as PodGroups (`central.model.nativegang`); an API server that does not serve them
gets one warning line and counts as having none, asked again as the DRA objects are.
With `--scheduler-sharding-mode=hard` every replica schedules, on its NodeShard's nodes, while
it holds its shard's Lease; the cluster-wide work (the built-in queues, enqueue, queue status)
is the leader Lease holder's (`central.scheduler.shards`).
Losing the Lease stops scheduling at once (`run` returns 1 and the process exits, as Volcano
does); a clean stop drains the binds and releases the Lease.

The cycle, the cache and the configuration loader are passed in, so this module does not
depend on how the core computes a decision.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from central.controllers.sharding import SHARD_LABEL, nodes_desired
from central.errors import InputError
from central.kube.client import (
    COORDINATION,
    CORE,
    POLICY,
    RESOURCE,
    SCHEDULING,
    SCHEDULING_BETA,
    STORAGE,
    VOLCANO_SCHEDULING,
    VOLCANO_SHARD,
    VOLCANO_TOPOLOGY,
    ApiError,
    KubeClient,
    path,
)
from central.kube.events import EventRecorder
from central.kube.informer import Reflector
from central.kube.leader import LeaderElector
from central.resources.vectors import parse_resource_list
from central.scheduler.feeder import CacheFeeder
from central.scheduler.gateremoval import DEFAULT_WORKERS as DEFAULT_GATE_WORKERS
from central.scheduler.kubesink import BIND_WORKERS, NATIVE_PODGROUP, KubeSink
from central.scheduler.shards import ShardGate, Sharding
from central.scheduler.startestimates import StartEstimates

if TYPE_CHECKING:  # the collaborators' types only: they are passed in
    from central.agents.feed import NodeDataFeed
    from central.framework.closing import CycleResult
    from central.framework.conf import SchedulerConf
    from central.model.cache import ClusterCache
    from central.model.sink import ClusterSink
    from central.scheduler.metrics import SchedulerMetrics

    # one scheduling cycle over the live cache, its decisions handed to the sink (`run_cycle`)
    Cycle = Callable[[ClusterCache, SchedulerConf, ClusterSink], CycleResult]

log = logging.getLogger(__name__)

# kind -> collection URL the scheduler watches
WATCHED = {
    "Node": path(CORE, "nodes"),
    "PriorityClass": path(SCHEDULING, "priorityclasses"),
    "Queue": path(VOLCANO_SCHEDULING, "queues"),
    "PodGroup": path(VOLCANO_SCHEDULING, "podgroups"),
    "HyperNode": path(VOLCANO_TOPOLOGY, "hypernodes"),
    "ResourceQuota": path(CORE, "resourcequotas"),  # the resourcequota plugin
    "PodDisruptionBudget": path(POLICY, "poddisruptionbudgets"),  # the pdb plugin
    "Pod": path(CORE, "pods"),
    # what volume binding reads (kube-scheduler's VolumeBinding, VolumeZone, NodeVolumeLimits)
    "PersistentVolumeClaim": path(CORE, "persistentvolumeclaims"),
    "PersistentVolume": path(CORE, "persistentvolumes"),
    "StorageClass": path(STORAGE, "storageclasses"),
    "CSINode": path(STORAGE, "csinodes"),
    # what Dynamic Resource Allocation reads (kube-scheduler's DynamicResources)
    "DeviceClass": path(RESOURCE, "deviceclasses"),
    "ResourceSlice": path(RESOURCE, "resourceslices"),
    "ResourceClaim": path(RESOURCE, "resourceclaims"),
    "ResourceClaimTemplate": path(RESOURCE, "resourceclaimtemplates"),
}
NATIVE = NATIVE_PODGROUP  # Kubernetes' gang API, watched with native_podgroups
NATIVE_URL = path(SCHEDULING_BETA, "podgroups")
OPTIONAL = {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", NATIVE}  # may not be served
BUILTIN_QUEUES = ("root", "default")
ARRIVAL_GAP = 0.1  # seconds: the least idle time before a cycle that a new pod brings forward
STOP_CHECK = 0.1  # seconds: how often a loop waiting for pods looks at its stop event


class ConfigFile:
    """The scheduler configuration, re-read when the file changes (a ConfigMap mount swaps a
    symlink). An invalid new version is logged and the last good one kept."""

    def __init__(self, filename: str | None, loader: Callable[[bytes, str], SchedulerConf], default: SchedulerConf):
        self.filename = filename
        self.loader = loader
        self.conf = default
        self._digest: str | None = None
        self._stat: tuple[float, int] | None = None
        self.reloads = 0
        self.rejected = 0
        if filename:  # a missing or invalid file at start-up is fatal: InputError
            try:
                with open(filename, "rb") as f:
                    data = f.read()
            except OSError as err:
                raise InputError(filename, err.strerror or str(err)) from None
            self.conf = loader(data, filename)
            self._digest = hashlib.sha256(data).hexdigest()

    def current(self) -> SchedulerConf:
        if not self.filename:
            return self.conf
        try:
            st = os.stat(self.filename)
            if (st.st_mtime, st.st_size) != self._stat:
                self._stat = (st.st_mtime, st.st_size)
                with open(self.filename, "rb") as f:
                    data = f.read()
                digest = hashlib.sha256(data).hexdigest()
                if digest != self._digest:
                    self._digest = digest
                    self.conf = self.loader(data, self.filename)
                    self.reloads += 1
                    log.info("scheduler configuration reloaded from %s", self.filename)
        except InputError as err:
            self.rejected += 1
            log.error("new scheduler configuration rejected, keeping the last good one: %s", err)
        except OSError as err:
            log.error("cannot read %s, keeping the last good configuration: %s", self.filename, err)
        return self.conf


class Scheduler:
    def __init__(self, client: KubeClient, cache: ClusterCache, cycle: Cycle, config: ConfigFile, *,
                 scheduler_name: str = "volcano", period: float = 1.0, elector: LeaderElector | None = None,
                 metrics: SchedulerMetrics | None = None, bind_workers: int = BIND_WORKERS, watch_timeout: int = 300,
                 bind_backoff: tuple[float, float] = (1.0, 10.0), node_feed: NodeDataFeed | None = None,
                 on_leading: Callable[[bool], None] | None = None, gate_workers: int = DEFAULT_GATE_WORKERS,
                 queue_backoff: tuple[float, float] = (1.0, 30.0), clock: Callable[[], float] = time.monotonic,
                 estimate_period: float = 0.0, native_podgroups: bool = False,
                 sharding: Sharding | None = None, lease_namespace: str = "", on_arrival: bool = True):
        self.client = client
        self.cache = cache
        self.cycle = cycle
        self.config = config
        self.period = period  # the longest wait between cycles; with `on_arrival` a new pod cuts it short
        self.on_arrival = on_arrival
        self.elector = elector
        self.metrics = metrics
        self.node_feed = node_feed  # the agents' reports, if any
        self.on_leading = on_leading  # told True once leading, False when stopping
        events = EventRecorder(client, scheduler_name)
        self.feeder = CacheFeeder(cache, scheduler_name,
                                  on_refused=lambda obj, why: events.emit(obj, "Warning", "Unreadable", why),
                                  native=native_podgroups)
        watched = {**WATCHED, NATIVE: NATIVE_URL} if native_podgroups else WATCHED
        self.reflectors = {kind: Reflector(client, url, self.feeder.handler("PodGroup" if kind == NATIVE else kind),
                                           watch_timeout=watch_timeout, optional=kind in OPTIONAL)
                           for kind, url in watched.items()}
        self.sharding = sharding
        if sharding is not None:
            cache.shard = frozenset()  # no node until this replica's NodeShard names some
            self.reflectors["NodeShard"] = Reflector(client, path(VOLCANO_SHARD, "nodeshards"), self._on_nodeshard,
                                                     watch_timeout=watch_timeout)
            self.reflectors["Lease"] = Reflector(client, path(COORDINATION, "leases", lease_namespace),
                                                 lambda event, obj: None, query={"labelSelector": SHARD_LABEL},
                                                 watch_timeout=watch_timeout)
            sharding.leases = self.reflectors["Lease"].objects
        objects = {kind: r.objects for kind, r in self.reflectors.items()}
        self.sink = KubeSink(client, self.feeder.bind_failed, objects, events, bind_workers, bind_backoff,
                             gate_workers=gate_workers)
        self.estimates = StartEstimates(client, objects["PodGroup"], estimate_period)
        self.queue_backoff, self.clock = queue_backoff, clock
        self._queue_retry: dict[str, tuple[int, float]] = {}  # built-in queue -> (failures, next attempt)
        self.cycles = 0
        self.failed_cycles = 0
        self.ready = threading.Event()  # synced and leading: what the readiness probe reports

    def _on_nodeshard(self, event: str, obj: dict[str, Any]) -> None:
        assert self.sharding is not None
        if obj.get("metadata", {}).get("name") != self.sharding.name:
            return
        nodes = frozenset() if event == "DELETED" else nodes_desired(obj) or frozenset()
        with self.feeder.lock:  # between cycles
            self.cache.shard = nodes

    def synced(self) -> bool:
        return all(r.synced.is_set() for r in self.reflectors.values())

    def run(self, stop: threading.Event) -> int:
        for reflector in self.reflectors.values():
            reflector.start()
        try:
            while not self.synced():
                if stop.wait(0.05):
                    return 0
            log.info("caches synced")
            native = self.reflectors.get(NATIVE)
            if native is not None and not native.served:
                log.warning("--native-podgroups: this API server does not serve %s (kube-apiserver needs "
                            "--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true); "
                            "no native PodGroup is read until it does", NATIVE_URL)
            if self.elector is not None and not self.elector.acquire(stop):
                return 0
            if self.sharding is not None:
                self.sharding.leader.start(stop)
            if self.on_leading is not None:
                self.on_leading(True)
            if self.metrics is not None:
                self.metrics.leader.set(1)
            self.ready.set()
            while not stop.is_set():
                if self.elector is not None and not self.elector.leading.is_set():
                    log.error("leadership lost: stepping down")
                    return 1
                started = time.monotonic()
                if self.sharding is None or self.sharding.leader.leading():
                    self._ensure_queues()
                try:
                    self.run_once()
                except Exception:  # one bad cycle must not stop scheduling (Volcano #5708)
                    self.failed_cycles += 1
                    if self.metrics is not None:
                        self.metrics.rolled_back.inc()
                    log.exception("scheduling cycle failed; the cache was rolled back to before it")
                self._wait_for_work(stop, started)
            return 0
        finally:
            if self.metrics is not None:
                self.metrics.leader.set(0)
            if self.ready.is_set() and self.on_leading is not None:
                self.on_leading(False)
            self.ready.clear()
            for reflector in self.reflectors.values():
                reflector.stop()
            self.sink.close()
            self.sink.events.close()
            if self.elector is not None:
                self.elector.release()
            if self.sharding is not None and stop.is_set():  # a new term keeps contending
                self.sharding.leader.release()

    def _wait_for_work(self, stop: threading.Event, started: float) -> None:
        """Until a period has passed since the cycle `started`, or sooner when a new pod has
        arrived: then as soon as the loop has idled as long as that cycle ran (at least
        `ARRIVAL_GAP`), so arrivals keep it busy at most half the time."""
        deadline = started + self.period
        if not self.on_arrival:
            stop.wait(max(0.0, deadline - time.monotonic()))
            return
        now = time.monotonic()
        stop.wait(max(0.0, min(deadline, now + max(ARRIVAL_GAP, now - started)) - now))
        while not stop.is_set() and (now := time.monotonic()) < deadline:
            if self.feeder.arrived.wait(min(deadline - now, STOP_CHECK)):
                return

    def run_once(self) -> CycleResult:
        conf = self.config.current()
        started = time.perf_counter()
        with self.feeder.lock:
            self.feeder.arrived.clear()  # this cycle sees every pod that has arrived
            # (tests that drive the loop with a fake cycle give it no configuration)
            self.feeder.gangs_wait = conf is not None and conf.plugin("gang") is not None
            self.feeder.unpark_due()
            if self.node_feed is not None:
                self.node_feed.sync(self.cache)
            gate = None
            if self.sharding is not None:
                self.cache.job_filter = self.sharding.job_filter(self.cache.jobs.values())
                gate = ShardGate(self.sink, self.client, self.cache, self.sharding, self.reflectors["PodGroup"].objects)
            result = self.cycle(self.cache, conf, gate if gate is not None else self.sink)
            for pod, writes in result.device_claims.items():  # before a failed bind can `forget` them
                for write in writes:
                    self.cache.dra.assume(pod, write)
            reasons, unschedulable = result.pending_reasons, result.unschedulable
            if gate is not None:
                gate.finish(self.feeder, self.reflectors["Pod"].objects)
                reasons, unschedulable = gate.pending(reasons), gate.unschedulable(unschedulable)
            queues = self._queue_figures(result) if self.metrics is not None else {}
            if self.estimates.due(self.clock()):  # a copy between cycles; the estimate runs off the loop
                self.estimates.start(self.cache, conf, self.clock())
        self.sink.flush()
        self.sink.pending({pod: why for pod, why in reasons.items() if pod not in result.invalid_job_pods})
        self.sink.podgroup_events(unschedulable)
        self.sink.plugin_events(result.events)
        self.sink.faults(result.faults)
        if self.sharding is not None:
            self.sharding.release_done(self.client, self.cache, self.reflectors["PodGroup"].objects, self.feeder.lock)
        self.cycles += 1
        if self.metrics is not None:
            self.metrics.observe_faults(result.faults)
            self.metrics.observe_cycle((time.perf_counter() - started) * 1000.0, scheduled=len(result.binds),
                                       unschedulable=len(result.pending_reasons), evicted=len(result.evictions),
                                       steps_ms={step: s * 1000.0 for step, s in result.timings.items()},
                                       plugin_ms={key: s * 1000.0 for key, s in result.plugin_timings.items()})
            self.metrics.observe_queues(queues)
        return result

    def _queue_figures(self, result: CycleResult) -> dict[str, dict[str, dict[str, float]]]:
        """allocated (from the cycle's queue statuses), deserved (the share proportion or
        capacity computed, as Volcano's proportion exports it; spec.deserved with neither) and
        capability (from the cache, read under the feeder's lock)."""
        figures: dict[str, dict[str, dict[str, float]]] = {}
        for name, queue in self.cache.queues.items():
            status = result.queues.get(name) or {}
            deserved = result.deserved.get(name, {}) if result.deserved_by else dict(queue.deserved)
            figures[name] = {"allocated": parse_resource_list(status.get("allocated"), "allocated"),
                             "deserved": deserved, "capacity": dict(queue.capability)}
        return figures

    def _ensure_queues(self) -> None:
        """Create the `root` and `default` queues while either is missing (at start, or deleted
        since). A refusal (the admission webhook not serving yet, a transient error) is retried
        with backoff, `queue_backoff` = (first, most) seconds doubling, and scheduling goes on
        meanwhile; Volcano retries each second for a minute, then exits."""
        now = self.clock()
        for name in BUILTIN_QUEUES:
            if name in self.reflectors["Queue"].objects:
                self._queue_retry.pop(name, None)
                continue
            failures, due = self._queue_retry.get(name, (0, now))
            if now < due:
                continue
            first = self.queue_backoff[0]
            try:
                self.client.create(path(VOLCANO_SCHEDULING, "queues"), {
                    "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                    "spec": {"weight": 1, "reclaimable": name != "root"}})
                log.info("created queue %s", name)
                self._queue_retry[name] = (0, now + first)  # until the watch shows it
            except ApiError as err:
                if err.code == 409:
                    self._queue_retry[name] = (0, now + first)
                    continue
                self._queue_refused(name, failures, err)
            except Exception as err:  # the API unreachable: the same retry
                self._queue_refused(name, failures, err)

    def _queue_refused(self, name: str, failures: int, err: Exception) -> None:
        first, most = self.queue_backoff
        delay = min(first * 2 ** failures, most)
        self._queue_retry[name] = (failures + 1, self.clock() + delay)
        log.error("cannot create queue %s (attempt %d), retrying in %.0fs: %s", name, failures + 1, delay, err)
