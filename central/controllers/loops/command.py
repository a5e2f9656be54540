"""`caldera controllers`: the Job, Queue, PodGroup, HyperNode, CronJob, JobFlow, JobTemplate and
sharding controllers. It takes the flags Volcano's chart passes vc-controller-manager
(`central.kube.volcanoflags`), `--controllers` with Volcano's controller names among them.

Reflectors start at once (a standby keeps warm caches); workers start only on the replica
that holds the Lease, after every cache has synced. Losing the Lease ends the term: the
replica steps down and stands again (`central.kube.leader.run_terms`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading

from prometheus_client import CollectorRegistry, Gauge

from central import gctuning
from central.admission.config import add_job_limit_arguments, job_limits_of
from central.controllers.loops.base import ControllerLoop
from central.controllers.loops.cronjobs import CronJobController
from central.controllers.loops.hypernodes import HyperNodeController
from central.controllers.loops.jobflows import JobFlowController, JobTemplateController
from central.controllers.loops.jobs import POD_WRITERS, POD_WRITERS_PER_JOB, JobController
from central.controllers.loops.podgroups import PodGroupController
from central.controllers.loops.queues import QueueController
from central.controllers.loops.sharding import ShardingController
from central.kube import volcanoflags
from central.kube.client import KubeClient
from central.kube.events import EventRecorder
from central.kube.leader import LeaderElector, run_terms
from central.model.jobspec import DEFAULT_LIMITS, JobLimits
from central.scheduler.metrics import QueuePodGroupCounts, serve

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--workers", "--worker-threads", type=int, default=3, help="Job controller workers")
    parser.add_argument("--pod-writers", type=int, default=POD_WRITERS,
                        help="pod creates and deletes in flight, all jobs together")
    parser.add_argument("--pod-writers-per-job", type=int, default=POD_WRITERS_PER_JOB,
                        help="pod creates and deletes in flight for one job")
    parser.add_argument("--scheduler-name", action="append", default=None,
                        help="PodGroups are made for plain pods of these schedulers (repeatable; default volcano)")
    add_job_limit_arguments(parser)  # the webhook's: give both the same values
    volcanoflags.add_bool(parser, "--leader-elect", True, "elect a leader on a Lease before reconciling (default "
                          "on; --leader-elect=false or --no-leader-elect: off)")
    parser.add_argument("--lock-object-namespace", "--leader-elect-resource-namespace", default="caldera-system",
                        help="namespace of the Lease")
    parser.add_argument("--lock-object-name", default="vc-controller-manager", help="name of the Lease")
    # Volcano's 50/100 would cap a big job's pods at 50/s however many are written at once
    parser.add_argument("--kube-api-qps", type=float, default=200.0, help="API requests per second")
    parser.add_argument("--kube-api-burst", type=int, default=400, help="API requests allowed in a burst")
    parser.add_argument("--listen-address", type=volcanoflags.listen_address, default="0.0.0.0", metavar="HOST[:PORT]",
                        help="address for /metrics, /healthz, /readyz; a port here (Volcano's :8081) wins over "
                             "--listen-port")
    parser.add_argument("--listen-port", type=int, default=8081, help="port for /metrics, /healthz, /readyz")
    parser.add_argument("--sharding-lease-namespace", default="caldera-system",
                        help="where the sharded schedulers (--scheduler-sharding-mode=hard) hold their shard Leases; "
                             "the sharding controller gives each live one a NodeShard")
    parser.add_argument("--hypernode-discovery-config", default="caldera-system/caldera-controller-configmap",
                        metavar="NAMESPACE/NAME", type=_config_map,
                        help="the ConfigMap whose volcano-controller.conf may enable HyperNode discovery from "
                             "node labels (Volcano's <release>-controller-configmap); \"\" turns discovery off")
    parser.add_argument("--controllers", type=_gates, default=[],
                        help="Volcano's controller gates: * for all, name or +name to run one, -name to leave it "
                             f"out, e.g. *,-sharding-controller (default: all); names: {', '.join(VOLCANO_NAMES)}")
    volcanoflags.add_common(parser)
    for flag in ("--worker-threads-for-gc", "--worker-threads-for-podgroup", "--worker-threads-for-queue",
                 "--worker-threads-for-cronjob"):
        parser.add_argument(flag, type=int, help="accepted for Volcano's chart: that controller runs one worker here")
    parser.add_argument("--sharding-configmap", help="accepted for Volcano's chart: the sharding controller reads "
                        "the shard Leases (--sharding-lease-namespace), not a ConfigMap")
    parser.add_argument("--sharding-configmap-namespace", help="accepted for Volcano's chart (see --sharding-configmap)")


# Volcano's name for each controller (`--controllers`); its gc-controller (finished Jobs' TTL) is
# part of the Job controller here
VOLCANO_NAMES = {"job-controller": "job-controller", "queue-controller": "queue-controller",
                 "pg-controller": "podgroup-controller", "hyperNode-controller": "hypernode-controller",
                 "cronjob-controller": "cronjob-controller", "jobflow-controller": "jobflow-controller",
                 "jobtemplate-controller": "jobtemplate-controller", "sharding-controller": "sharding-controller",
                 "gc-controller": "job-controller"}
# the flags of Volcano's chart, besides `add_common`'s, that change nothing here
VOLCANO_ONLY = ("worker_threads_for_gc", "worker_threads_for_podgroup", "worker_threads_for_queue",
                "worker_threads_for_cronjob", "sharding_configmap", "sharding_configmap_namespace")


def _gates(text: str) -> list[str]:
    gates = [gate.strip() for gate in text.split(",") if gate.strip()]
    for gate in gates:
        if gate != "*" and gate.lstrip("+-") not in VOLCANO_NAMES:
            raise argparse.ArgumentTypeError(f"unknown controller {gate.lstrip('+-')!r}; known: {', '.join(VOLCANO_NAMES)}")
    return gates


def enabled(name: str, gates: list[str]) -> bool:
    """Volcano's isControllerEnabled: the first gate naming the controller decides (name or +name
    runs it, -name leaves it out); with none, * runs it; no gates at all run everything."""
    if not gates:
        return True
    for gate in gates:
        if gate in (name, "+" + name):
            return True
        if gate == "-" + name:
            return False
    return "*" in gates


def chosen_loops(gates: list[str]) -> set[str]:
    """The names of the controller loops `--controllers` runs."""
    running = {ours for volcano, ours in VOLCANO_NAMES.items() if volcano != "gc-controller" and enabled(volcano, gates)}
    if "job-controller" in running and not enabled("gc-controller", gates):
        log.info("--controllers: finished Jobs' TTL (Volcano's gc-controller) is the Job controller's work here; it stays on")
    return running


def _config_map(text: str) -> tuple[str, str] | None:
    namespace, slash, name = text.partition("/")
    if not text:
        return None
    if not (slash and namespace and name):
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME, got {text!r}")
    return namespace, name


def build(client: KubeClient, workers: int, scheduler_names: tuple[str, ...],
          limits: JobLimits = DEFAULT_LIMITS, pod_writers: tuple[int, int] = (POD_WRITERS, POD_WRITERS_PER_JOB),
          discovery_config: tuple[str, str] | None = None,
          shard_lease_namespace: str = "caldera-system") -> list[ControllerLoop]:
    events = EventRecorder(client, "vc-controller-manager")
    return [JobController(client, events, workers, limits=limits, pod_writers=pod_writers[0],
                          pod_writers_per_job=pod_writers[1]), QueueController(client, events),
            PodGroupController(client, events, scheduler_names=scheduler_names),
            HyperNodeController(client, events, discovery_config=discovery_config),
            CronJobController(client, events), JobFlowController(client, events), JobTemplateController(client, events),
            ShardingController(client, events, shard_lease_namespace)]


def run_controllers(loops: list[ControllerLoop], stop: threading.Event, elector: LeaderElector | None,
                    leading: threading.Event | None = None) -> int:
    """Watch, then (holding the Lease where `elector` is given) reconcile until `stop`; `leading`
    is set while this replica's workers run (the caldera_controllers_leader gauge reads it)."""
    leading = leading or threading.Event()
    for loop in loops:
        loop.start_watching()
    try:
        while not all(loop.synced() for loop in loops):
            if stop.wait(0.05):
                return 0
        if elector is not None and not elector.acquire(stop):
            return 0
        leading.set()  # before the workers: nothing of theirs happens while it still reads unset
        for loop in loops:
            loop.start_workers()
        while not stop.wait(0.5):
            if elector is not None and not elector.leading.is_set():
                log.error("leadership lost: stepping down")
                return 1
        return 0
    finally:
        leading.clear()
        for loop in loops:
            loop.stop()
        if elector is not None:
            elector.release()


def run(args: argparse.Namespace) -> int:
    addresses = volcanoflags.start(args, VOLCANO_ONLY)
    running = chosen_loops(args.controllers)
    gctuning.for_large_heaps()
    client = KubeClient.connect(args.kubeconfig, args.kube_api_qps, args.kube_api_burst)
    elector = None
    if args.leader_elect:
        elector = LeaderElector(client.fork(), args.lock_object_namespace, args.lock_object_name,
                                f"{socket.gethostname()}_{os.getpid()}")
    current: list[ControllerLoop] = []  # this term's loops
    registry = CollectorRegistry()
    leading = threading.Event()
    # every replica exports it (the standby too): max() over them says whether any one leads
    Gauge("caldera_controllers_leader", "1 while this replica leads and reconciles",
          registry=registry).set_function(lambda: 1.0 if leading.is_set() else 0.0)
    servers = [serve(registry, port, lambda: bool(current) and all(loop.synced() for loop in current), host=host)
               for host, port in addresses]
    stop = threading.Event()

    def term(term_client: KubeClient) -> int:  # a lost lease ends the term, not the process
        loops = [loop for loop in build(term_client, args.workers, tuple(args.scheduler_name or ["volcano"]),
                                        job_limits_of(args), (args.pod_writers, args.pod_writers_per_job),
                                        args.hypernode_discovery_config, args.sharding_lease_namespace)
                 if loop.name in running]
        current[:] = loops
        queues = next((loop for loop in loops if isinstance(loop, QueueController)), None)
        counts = QueuePodGroupCounts(queues.queues.objects) if queues is not None else None
        if counts is not None:
            registry.register(counts)
        try:
            return run_controllers(loops, stop, elector, leading)
        finally:
            if counts is not None:
                registry.unregister(counts)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        return run_terms(client, elector, stop, term)
    finally:
        for server in servers:
            server.shutdown()
