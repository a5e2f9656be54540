"""`caldera scheduler`: the scheduler process on a cluster. It takes the flags Volcano's chart passes
vc-scheduler (`central.kube.volcanoflags`), besides its own."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from central import gctuning
from central.errors import InputError
from central.kube import volcanoflags
from central.kube.client import CORE, ApiError, KubeClient, path
from central.kube.leader import LeaderElector, run_terms
from central.scheduler.kubesink import BIND_WORKERS
from central.scheduler.loop import ConfigFile, Scheduler
from central.scheduler.metrics import SchedulerMetrics, serve
from central.scheduler.shards import HARD, NONE, ClusterLeader, Sharding, shard_lease_name

if TYPE_CHECKING:  # imported when asked for (--agent-address): gRPC is not loaded otherwise
    from central.agents.feed import NodeDataFeed
    from central.agents.server import ReceiverServer

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--scheduler-name", default="volcano", help="schedule pods with this spec.schedulerName")
    parser.add_argument("--scheduler-conf", "--config", dest="config",
                        help="volcano-scheduler.conf; re-read when it changes, the last good one kept")
    parser.add_argument("--schedule-period", "--period", dest="period", type=volcanoflags.seconds, default=1.0,
                        help="the longest wait between scheduling cycles, in seconds or as a duration like 1s "
                             "(default 1); a new pod brings the next cycle forward unless --no-cycle-on-arrival")
    parser.add_argument("--cycle-on-arrival", action=argparse.BooleanOptionalAction, default=True,
                        help="start the next cycle when a new pod arrives, once the scheduler has idled as long "
                             "as its last cycle ran (at least 0.1 s), instead of at the next period; with gang, "
                             "not for a pod whose job has fewer pods than its minAvailable yet (default on)")
    volcanoflags.add_bool(parser, "--leader-elect", True, "elect a leader on a Lease before scheduling (default "
                          "on; --leader-elect=false or --no-leader-elect: off)")
    parser.add_argument("--lock-object-namespace", "--leader-elect-resource-namespace", default="caldera-system",
                        help="namespace of the Lease")
    parser.add_argument("--lock-object-name", default="vc-scheduler", help="name of the Lease")
    parser.add_argument("--leader-elect-lease-duration", type=float, default=15.0,
                        help="seconds a Lease holds without renewal")
    parser.add_argument("--leader-elect-renew-deadline", type=float, default=10.0,
                        help="seconds the leader keeps trying to renew before it gives up")
    parser.add_argument("--leader-elect-retry-period", type=float, default=2.0,
                        help="seconds between tries to acquire or renew the Lease")
    parser.add_argument("--scheduler-sharding-mode", choices=[NONE, HARD], default=NONE,
                        help="none (default): one active scheduler, by leader election; hard: every replica "
                             "schedules, only onto the nodes of its NodeShard (Volcano's soft mode is not supported)")
    parser.add_argument("--scheduler-sharding-name", default="volcano",
                        help="the NodeShard this replica schedules onto (--scheduler-sharding-mode=hard); one "
                             "replica per name schedules, others of the same name stand by on its Lease")
    parser.add_argument("--kube-api-qps", type=float, default=2000.0, help="API requests per second")
    parser.add_argument("--kube-api-burst", type=int, default=2000, help="API requests allowed in a burst")
    parser.add_argument("--bind-workers", type=int, default=BIND_WORKERS, help="concurrent pods/binding calls")
    parser.add_argument("--estimate-start-period", type=float, default=0.0, metavar="SECONDS",
                        help="every SECONDS, estimate when each waiting PodGroup starts (a forward run of the cycle "
                             "off the loop) and annotate it caldera.sh/estimated-start; 0 (default) is off")
    parser.add_argument("--feature-gates", default="",
                        help="Volcano's feature gates, Name=bool,...; SchedulingGatesQueueAdmission=true removes the "
                             "queue-allocation scheduling gate from opted-in pods once their queue admits them")
    parser.add_argument("--gate-removal-worker-num", type=int, default=5,
                        help="The number of async workers for scheduling gate removal (used when "
                             "SchedulingGatesQueueAdmission is enabled).")
    parser.add_argument("--native-podgroups", action="store_true",
                        help="also read Kubernetes' own gang API (scheduling.k8s.io/v1beta1 PodGroup, served with "
                             "kube-apiserver's GenericWorkload feature gate) as PodGroups: minCount is minMember, the "
                             "queue is the scheduling.volcano.sh/queue-name annotation (else default), and pods that "
                             "name the group in spec.schedulingGroup.podGroupName are its tasks (default off)")
    parser.add_argument("--listen-address", type=volcanoflags.listen_address, default="0.0.0.0", metavar="HOST[:PORT]",
                        help="address for /metrics, /healthz, /readyz; a port here (Volcano's :8080) wins over "
                             "--listen-port")
    parser.add_argument("--listen-port", type=int, default=8080, help="port for /metrics, /healthz, /readyz")
    parser.add_argument("--agent-address", default="",
                        help="serve the node agents' report streams here (e.g. 0.0.0.0:7070); off when empty")
    parser.add_argument("--agent-tls-dir", default="",
                        help="tls.crt and tls.key the agent endpoint serves (the Secret caldera-scheduler-tls); "
                             "with --agent-auth mtls also ca.crt, the CA of the agents' client certificates")
    parser.add_argument("--agent-auth", choices=["token", "mtls", "none"], default="token",
                        help="how an agent proves its node: its projected ServiceAccount token checked with "
                             "TokenReview (default), a client certificate, or not at all (a stream is bound to "
                             "the first node it reports; tests only)")
    parser.add_argument("--agent-token-audience", default="caldera-scheduler",
                        help="the audience agents' tokens must carry (--agent-auth token)")
    parser.add_argument("--agent-service-account", default="caldera-system:caldera-nodeagent",
                        help="namespace:name of the agents' ServiceAccount; tokens of any other are refused")
    parser.add_argument("--agent-insecure", action="store_true",
                        help="accept agent streams without TLS (tests and trusted networks only)")
    volcanoflags.add_common(parser)
    volcanoflags.add_bool(parser, "--enable-pprof", None, "accepted for Volcano's chart: no Go profiler to serve")
    parser.add_argument("--node-worker-threads", type=int, help="accepted for Volcano's chart: node events are "
                        "applied on the informer's thread")
    parser.add_argument("--percentage-nodes-to-find", type=int, help="accepted for Volcano's chart: every node is "
                        "filtered and scored at once, so the search never stops early")
    parser.add_argument("--plugins-dir", default="", help="Volcano's Go plugins (.so): Caldera cannot load them, and "
                        "refuses a non-empty value")
    parser.add_argument("--ignored-provisioners", default="", help="Volcano's provisioners left out of volume binding: "
                        "not supported, a non-empty value is refused")


# the flags of Volcano's chart, besides `add_common`'s, that change nothing here
VOLCANO_ONLY = ("enable_pprof", "node_worker_threads", "percentage_nodes_to_find")


def agent_receiver(args: argparse.Namespace,
                   client: KubeClient) -> tuple[ReceiverServer, NodeDataFeed] | tuple[None, None]:
    """(receiver, feed) for the agents' reports, or (None, None) when not asked for."""
    if not args.agent_address:
        return None, None
    from central.agents.feed import NodeDataFeed
    from central.agents.server import ReceiverServer, ServerTls
    from central.agents.store import NodeReportStore
    from central.agents.tokenreview import TokenReviewer

    if not args.agent_tls_dir and not args.agent_insecure:
        raise InputError("--agent-address", "needs --agent-tls-dir (TLS), or --agent-insecure to accept plaintext")
    if args.agent_auth == "mtls" and not args.agent_tls_dir:
        raise InputError("--agent-auth", "mtls needs --agent-tls-dir with ca.crt")
    tls = None
    if args.agent_tls_dir:
        folder = Path(args.agent_tls_dir)
        tls = ServerTls(folder / "tls.crt", folder / "tls.key",
                        folder / "ca.crt" if args.agent_auth == "mtls" else None)
    authenticate = None
    if args.agent_auth == "token":
        authenticate = TokenReviewer(client, args.agent_token_audience, args.agent_service_account)
    store = NodeReportStore()
    return ReceiverServer(store, args.agent_address, tls=tls, authenticate=authenticate), NodeDataFeed(store)


def start_receiver(receiver: ReceiverServer, stop: threading.Event) -> Callable[[], bool]:
    """Start the agent endpoint now or, while its certificate cannot be read (the Secret not
    made yet), retry every 5 s after one log line; returns "is it serving" for /readyz."""
    def attempt() -> bool:
        try:
            receiver.start()
            return True
        except OSError as err:
            log.error("agent endpoint not started, retrying every 5 s: %s", err)
            return False

    if not attempt():
        def retry() -> None:
            while not stop.wait(5.0):
                try:
                    receiver.start()
                    log.info("agent endpoint started")
                    return
                except OSError:
                    continue
        threading.Thread(target=retry, daemon=True, name="agent-endpoint").start()
    return lambda: receiver.port != 0


LEADER_LABEL = "caldera.sh/leader"
CONNECTIONS_BESIDE_BINDS = 48  # kept alive for the watches (one each), the status, gate and event lanes, the Lease


def leader_label(client: KubeClient) -> Callable[[bool], None] | None:
    """Marks this replica's pod `caldera.sh/leader: "true"` while it leads, so the Service the
    agents stream to selects the leader only. Needs POD_NAME/POD_NAMESPACE (downward API)."""
    name, namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
    if not name or not namespace:
        return None

    def mark(leading: bool) -> None:
        try:
            client.merge_patch(path(CORE, "pods", namespace, name),
                               {"metadata": {"labels": {LEADER_LABEL: "true" if leading else "false"}}})
        except ApiError as err:
            log.warning("cannot label this pod %s: %s", "leader" if leading else "standby", err)

    mark(False)  # a restarted container starts as a standby
    return mark


def run(args: argparse.Namespace) -> int:
    from central.framework.conf import DEFAULT_CONF_YAML, SchedulerConf
    from central.model.cache import ClusterCache
    from central.model.schedulinggate import parse_feature_gates
    from central.scheduler import load_config
    from central.scheduler.cycle import run_cycle

    addresses = volcanoflags.start(args, VOLCANO_ONLY)
    if args.plugins_dir:
        raise InputError("--plugins-dir", f"{args.plugins_dir!r}: Caldera cannot load Volcano's Go plugins")
    if args.ignored_provisioners:
        raise InputError("--ignored-provisioners", f"{args.ignored_provisioners!r}: not supported, every "
                                                   "provisioner takes part in volume binding")
    gctuning.for_large_heaps()
    client = KubeClient.connect(args.kubeconfig, args.kube_api_qps, args.kube_api_burst,
                                connections=args.bind_workers + CONNECTIONS_BESIDE_BINDS)
    features = parse_feature_gates(args.feature_gates)

    def load(data: bytes | str, filename: str) -> SchedulerConf:  # the process's feature gates ride on every version
        return replace(load_config(data, filename), features=features)
    config = ConfigFile(args.config, load, load(DEFAULT_CONF_YAML, "built-in default"))
    elector = leader = None
    sharded = args.scheduler_sharding_mode == HARD
    if args.leader_elect or sharded:
        if not 0 < args.leader_elect_retry_period < args.leader_elect_renew_deadline < args.leader_elect_lease_duration:
            # client-go's rule: a leader must give up before a standby may take the Lease over
            raise InputError("--leader-elect-renew-deadline",
                             "need 0 < retry period < renew deadline < lease duration, got"
                             f" {args.leader_elect_retry_period} < {args.leader_elect_renew_deadline} < "
                             f"{args.leader_elect_lease_duration}")
        identity = f"{socket.gethostname()}_{os.getpid()}"
        timing = {"lease_duration": args.leader_elect_lease_duration,
                  "renew_deadline": args.leader_elect_renew_deadline, "retry_period": args.leader_elect_retry_period}
        leader = LeaderElector(client.fork(), args.lock_object_namespace, args.lock_object_name, identity, **timing)
        elector = leader
        if sharded:  # a replica schedules while it holds its shard's Lease; the leader Lease is for cluster-wide work
            from central.controllers.sharding import SHARD_LABEL

            elector = LeaderElector(client.fork(), args.lock_object_namespace,
                                    shard_lease_name(args.lock_object_name, args.scheduler_sharding_name), identity,
                                    labels={SHARD_LABEL: args.scheduler_sharding_name}, **timing)
    receiver, feed = agent_receiver(args, client)
    metrics = SchedulerMetrics()
    on_leading = leader_label(client) if elector is not None else None
    current: list[Scheduler] = []  # this term's scheduler: a lost lease ends the term, not the process
    # with leader election off, a sharded replica does the cluster-wide work itself
    cluster_leader = ClusterLeader(leader if args.leader_elect else None) if sharded else None

    def term(term_client: KubeClient) -> int:
        # a fresh cache and a fresh view of the agents' reports: the next term starts as a restart would
        cache = ClusterCache(scheduler_name=args.scheduler_name)
        cache.volumes.tracked = True  # the storage objects are watched: a claim the API lacks does not exist
        scheduler = Scheduler(term_client, cache, run_cycle, config,
                              scheduler_name=args.scheduler_name, period=args.period, elector=elector,
                              metrics=metrics, bind_workers=args.bind_workers,
                              node_feed=feed.anew() if feed is not None else None,
                              on_leading=on_leading, gate_workers=args.gate_removal_worker_num,
                              estimate_period=args.estimate_start_period, on_arrival=args.cycle_on_arrival,
                              native_podgroups=args.native_podgroups,
                              sharding=Sharding(args.scheduler_sharding_name, cluster_leader)
                              if cluster_leader is not None else None,
                              lease_namespace=args.lock_object_namespace)
        current[:] = [scheduler]
        return scheduler.run(stop)

    if receiver is not None:
        from central.agents.server import ReceiverCollector

        metrics.registry.register(ReceiverCollector(receiver.service))
    stop = threading.Event()
    serving = start_receiver(receiver, stop) if receiver is not None else (lambda: True)
    # a warm standby is ready too; standbys take reports as well, so their node view is warm at hand-over
    servers = [serve(metrics.registry, port, lambda: bool(current) and current[0].synced() and serving(), host=host)
               for host, port in addresses]
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        return run_terms(client, elector, stop, term)
    finally:
        for server in servers:
            server.shutdown()
        if receiver is not None:
            receiver.stop()
