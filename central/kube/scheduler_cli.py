"""`caldera scheduler`: the scheduler process on a cluster (flags as Volcano's vc-scheduler)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading

from central.kube.client import KubeClient
from central.kube.leader import LeaderElector
from central.kube.metrics import SchedulerMetrics, serve
from central.kube.scheduler import ConfigFile, Scheduler


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--scheduler-name", default="volcano", help="schedule pods with this spec.schedulerName")
    parser.add_argument("--scheduler-conf", "--config", dest="config",
                        help="volcano-scheduler.conf; re-read when it changes, the last good one kept")
    parser.add_argument("--schedule-period", "--period", dest="period", type=float, default=1.0,
                        help="seconds between scheduling cycles (default 1)")
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                        help="elect a leader on a Lease before scheduling (default on)")
    parser.add_argument("--lock-object-namespace", default="caldera-system", help="namespace of the Lease")
    parser.add_argument("--lock-object-name", default="vc-scheduler", help="name of the Lease")
    parser.add_argument("--leader-elect-lease-duration", type=float, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=float, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=float, default=2.0)
    parser.add_argument("--kube-api-qps", type=float, default=2000.0)
    parser.add_argument("--kube-api-burst", type=int, default=2000)
    parser.add_argument("--bind-workers", type=int, default=16, help="concurrent pods/binding calls")
    parser.add_argument("--listen-port", type=int, default=8080, help="port for /metrics, /healthz, /readyz")


def run(args: argparse.Namespace) -> int:
    from central.framework.conf import DEFAULT_CONF_YAML, load_config
    from central.model.cache import ClusterCache
    from central.scheduler.cycle import run_cycle

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    client = KubeClient.connect(args.kubeconfig, args.kube_api_qps, args.kube_api_burst)
    config = ConfigFile(args.config, load_config, load_config(DEFAULT_CONF_YAML, "built-in default"))
    elector = None
    if args.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        elector = LeaderElector(client, args.lock_object_namespace, args.lock_object_name, identity,
                                lease_duration=args.leader_elect_lease_duration,
                                renew_deadline=args.leader_elect_renew_deadline,
                                retry_period=args.leader_elect_retry_period)
    metrics = SchedulerMetrics()
    scheduler = Scheduler(client, ClusterCache(scheduler_name=args.scheduler_name), run_cycle, config,
                          scheduler_name=args.scheduler_name, period=args.period, elector=elector,
                          metrics=metrics, bind_workers=args.bind_workers)
    server = serve(metrics.registry, args.listen_port, scheduler.synced)  # a warm standby is ready too
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        return scheduler.run(stop)
    finally:
        server.shutdown()
