"""`caldera up` / `caldera down`: a real local cluster with Caldera installed, for a person to
try Caldera and for the end-to-end suite.

`up` builds (once) and starts etcd, kube-apiserver and kube-controller-manager on loopback,
installs Caldera from `daemonset/` as the install docs say, and then runs every Caldera
workload of those manifests as a local process, the way a kubelet would run its pod: the
container's command and arguments from the manifest, its ConfigMap, Secret and projected
ServiceAccount-token volumes materialised from the apiserver under DIR/pods/, and its own
ServiceAccount's token as its only credential (`central.localcluster.podrunner`). The local
adaptations are few and visible there: loopback ports instead of container ports, the
webhook reached by URL, and each agent reading a simulated node's /sys and /proc. Simulated
kubelets register the nodes.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from central.admission.authorizer import AGENT_USER, NODE_NAME_CLAIM
from central.admission.webhook import AUTHORIZE_ROUTE
from central.certs.command import WEBHOOK_SECRET
from central.errors import InputError
from central.kube.client import ApiError, KubeClient
from central.localcluster import build, controlplane, install
from central.localcluster.podrunner import PodRunner, checkout_env
from central.localcluster.processes import PortPool, Process, StartError, Supervisor, alive
from central.localcluster.simkubelet import RBAC as SIMKUBELET_RBAC
from central.localcluster.simkubelet import NodeSpec

AGENT_LIST_PODS = "caldera-nodeagent-list-pods"  # the RBAC fallback's ClusterRole and binding


@dataclass
class Cluster:
    """What `up` started: where to reach it, and the supervisor that stops it."""

    dir: Path
    server: str
    kubeconfig: Path
    nodes: list[NodeSpec]
    sup: Supervisor
    ports: dict[str, int] = field(default_factory=dict)
    runner: PodRunner | None = None
    extra_args: dict[str, list[str]] = field(default_factory=dict)  # workload -> flags `up` added (feature gates)

    def admin(self) -> KubeClient:
        return KubeClient.connect(str(self.kubeconfig), qps=1000, burst=1000)

    def start(self, workload: str, process_name: str | None = None) -> Process:
        """Start (again) a replica of a workload of daemonset/; a name it ran under before keeps
        its ports, so agents and probes find a restarted scheduler where they found it."""
        assert self.runner is not None
        proc = self.runner.start(workload, extra=self.extra_args.get(workload), process_name=process_name)
        port = self.ports.get(f"{proc.name}:--listen-port")
        if port:
            self.sup.wait_ready(proc, lambda: _http_ok(port, "/healthz"), 60)
        return proc

    def process(self, name: str) -> Process:
        return next(p for p in self.sup.procs if p.name == name)


SCHEDULER_CONFIGMAP = ("volcano-scheduler-configmap", "volcano-scheduler.conf")


def up(directory: Path, nodes: list[NodeSpec], port: int = 0, manifests: Path | None = None,
       agents: bool = True, scheduler_conf: str | None = None, say: build.Progress = print, controllers: bool = True,
       kcm_controllers: str = controlplane.CONTROLLERS, port_range: tuple[int, int] | None = None,
       feature_gates: str = "") -> Cluster:
    """Start everything; on any failure stop what was started and raise StartError/BuildError.
    With no `nodes` no simulated kubelet runs (the caller registers nodes, as `bench --e2e`);
    without `controllers` Caldera's controllers are not started; `feature_gates` goes to the
    webhook and the scheduler as their --feature-gates. Every process listens on
    127.0.0.1, on ports inside `port_range` where it is given."""
    pool = PortPool(*port_range) if port_range else PortPool()
    sup = Supervisor(directory, pool)
    if any(alive(p.pid) for p in sup.procs):
        raise StartError(f"{directory} already holds a running cluster; `caldera down --dir {directory}` first")
    if (directory / "state.json").exists():  # left by a cluster whose processes are gone: start afresh
        down(directory)
        sup = Supervisor(directory, pool)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return _up(sup, nodes, port, manifests or install.repo_manifests(), agents, scheduler_conf, say,
                   controllers, kcm_controllers, feature_gates)
    except BaseException:
        sup.stop_all()
        raise


def _up(sup: Supervisor, nodes: list[NodeSpec], port: int, manifests: Path, agents: bool,
        scheduler_conf: str | None, say: build.Progress, controllers: bool, kcm_controllers: str,
        feature_gates: str = "") -> Cluster:
    started = time.monotonic()
    bins = build.binaries(progress=say)
    say("starting etcd, kube-apiserver and kube-controller-manager ...")
    webhook_port = sup.ports.take()  # before the API server: its webhook client certificate names it
    endpoints = controlplane.start(sup, bins, port, kcm_controllers, webhook_port)
    cluster = Cluster(sup.dir, endpoints.apiserver, sup.dir / "kubeconfig", nodes, sup)
    admin = cluster.admin()
    discovery = install.Discovery(admin)
    for obj in SIMKUBELET_RBAC:
        install.apply(admin, discovery, obj)

    say(f"installing Caldera from {manifests} ...")
    configmaps = {SCHEDULER_CONFIGMAP[0]: {SCHEDULER_CONFIGMAP[1]: scheduler_conf}} if scheduler_conf else None
    # The agents' pod reads are authorised by the webhook (below), not by an RBAC grant.
    workloads = install.install(admin, manifests, configmaps, leave_out=frozenset({AGENT_LIST_PODS}))
    runner = cluster.runner = PodRunner(cluster, admin, workloads)
    runner.run_job("caldera-certs", extra=["--ip-address=127.0.0.1"])

    if nodes:
        say(f"registering {len(nodes)} simulated node(s) ...")
        node_json = json.dumps([n.__dict__ for n in nodes])
        kubelet = sup.start("simkubelet", [sys.executable, "-m", "central.localcluster.simkubelet",
                                           f"--kubeconfig={sup.dir / 'kubeconfigs' / 'simkubelet'}",
                                           f"--nodes={node_json}", f"--hosts={sup.dir / 'nodes'}"],
                                          env=checkout_env())
        sup.wait_ready(kubelet, lambda: _nodes_schedulable(admin, nodes), 120)

    say(f"starting Caldera's webhook, {'controllers and ' if controllers else ''}scheduler ...")
    gates = [f"--feature-gates={feature_gates}"] if feature_gates else []
    webhook = runner.start("caldera-admission", extra=[f"--webhook-url=https://127.0.0.1:{webhook_port}", *gates,
                                                       f"--client-ca-file={controlplane.webhook_client_ca(sup.dir)}"],
                           ports={"--port": webhook_port})
    sup.wait_ready(webhook, lambda: _webhooks_have_ca(admin), 60)
    controlplane.enable_agent_authorizer(sup.dir, f"https://127.0.0.1:{webhook_port}{AUTHORIZE_ROUTE}",
                                         _webhook_ca(admin))
    sup.wait_ready(webhook, lambda: _agent_may_list_its_node(admin), 90)
    if controllers:
        proc = runner.start("caldera-controllers")
        sup.wait_ready(proc, lambda: _http_ok(cluster.ports["caldera-controllers:--listen-port"], "/readyz"), 60)
    cluster.extra_args["caldera-scheduler"] = gates  # a restarted scheduler keeps them
    scheduler = runner.start("caldera-scheduler", extra=gates)
    sup.wait_ready(scheduler, lambda: _http_ok(cluster.ports["caldera-scheduler:--listen-port"], "/readyz"), 60)
    if agents:
        say(f"starting {len(nodes)} node agent(s) ...")
        for node in nodes:
            agent = runner.start_agent(node)
            sup.wait_ready(agent, lambda: _http_ok(cluster.ports[f"{agent.name}:exporter"], "/readyz"), 60)
    (sup.dir / "cluster.json").write_text(json.dumps({"server": cluster.server, "ports": cluster.ports,
                                                      "nodes": [n.__dict__ for n in nodes]}, indent=1))
    say(f"ready in {time.monotonic() - started:.0f} s")
    return cluster


def _http_ok(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except OSError:
        return False


def _nodes_schedulable(admin: KubeClient, nodes: list[NodeSpec]) -> bool:
    """Every node Ready and free of the taints the apiserver and the node lifecycle controller put
    on a new Node (node.kubernetes.io/...); a node's own registered taints stay."""
    listing = admin.get("/api/v1/nodes?labelSelector=caldera.sh%2Fsimulated%3Dtrue")
    ready = {n["metadata"]["name"] for n in listing.get("items", [])
             if not any(str(t.get("key", "")).startswith("node.kubernetes.io/") for t in n["spec"].get("taints") or [])
             and any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))}
    return all(n.name in ready for n in nodes)


def _webhook_ca(admin: KubeClient) -> bytes:
    secret = admin.get(f"/api/v1/namespaces/caldera-system/secrets/{WEBHOOK_SECRET}")
    return base64.b64decode(secret["data"]["ca.crt"])


def _agent_may_list_its_node(admin: KubeClient) -> bool:
    """Whether the apiserver has loaded the agents' pod-read authorizer: only it allows this."""
    review = admin.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": AGENT_USER, "extra": {NODE_NAME_CLAIM: ["node-probe"]},
                 "resourceAttributes": {"verb": "list", "resource": "pods", "fieldSelector": {
                     "requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["node-probe"]}]}}}})
    return bool(review.get("status", {}).get("allowed"))


def _webhooks_have_ca(admin: KubeClient) -> bool:
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        listing = admin.get(f"/apis/admissionregistration.k8s.io/v1/{kind}")
        for config in listing.get("items", []):
            if config["metadata"]["name"].startswith("caldera"):
                if not all(h["clientConfig"].get("caBundle") and h["clientConfig"].get("url")
                           for h in config.get("webhooks", [])):
                    return False
    return True


def down(directory: Path, say: build.Progress | None = None) -> int:
    """Stop every process `up` recorded in DIR and remove DIR's state; safe on a half-started
    or missing DIR; `say` hears which process it waits for. Returns how many were stopped."""
    sup = Supervisor(directory)
    count = len(sup.procs)
    sup.stop_all(say=say)
    if directory.exists():
        shutil.rmtree(directory, ignore_errors=True)
    return count


# --- the commands --------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, help="folder for the cluster's state, logs and kubeconfig (required but with --build-only)")
    parser.add_argument("--nodes", type=int, default=2, help="simulated nodes (default 2)")
    parser.add_argument("--node-cpu", default="32", help="CPUs per node (default 32)")
    parser.add_argument("--node-memory", default="128Gi", help="memory per node (default 128Gi)")
    parser.add_argument("--node-gpus", type=int, default=0, help="GPUs per node (default 0)")
    parser.add_argument("--node-dra-gpus", type=int, default=0,
                        help="GPUs per node published as DRA devices by the simulated driver gpu.sim.caldera.sh (default 0)")
    parser.add_argument("--node-dra-nics", type=int, default=0, help="NICs per node published the same way (default 0)")
    parser.add_argument("--numa", type=int, default=2, help="NUMA nodes per node (default 2)")
    parser.add_argument("--port", type=int, default=0, help="kube-apiserver's port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--port-range", metavar="LO-HI", default="",
                        help="every port the cluster listens on (etcd, the API server, the controller manager, "
                             f"Caldera's processes, the agents) from this range, e.g. 30000-30099; it needs "
                             f"{FIXED_PORTS} plus one per node (default: any free ports); all on 127.0.0.1")
    parser.add_argument("--scheduler-conf", type=Path, help="a volcano-scheduler.conf to install instead of the manifests' one")
    parser.add_argument("--no-agents", dest="agents", action="store_false", default=True,
                        help="start no node agents (by default one runs per simulated node)")
    parser.add_argument("--build-only", action="store_true", help="build the control plane's binaries and exit")


# etcd (client, peer), kube-apiserver, kube-controller-manager, the webhook (HTTPS, health),
# the scheduler (metrics, agents' stream), the controllers; plus one exporter per agent
FIXED_PORTS = 9


def port_range(text: str, nodes: int) -> tuple[int, int] | None:
    """--port-range LO-HI as (lo, hi), checked to hold what the cluster needs; None when not given."""
    if not text:
        return None
    lo_text, dash, hi_text = text.partition("-")
    try:
        lo, hi = int(lo_text), int(hi_text)
    except ValueError:
        lo = hi = -1
    if not dash or not 1024 <= lo <= hi <= 65535:
        raise InputError("--port-range", f"expected LO-HI with 1024 <= LO <= HI <= 65535, got {text!r}")
    if hi - lo + 1 < FIXED_PORTS + nodes:
        raise InputError("--port-range", f"{text} holds {hi - lo + 1} ports; {nodes} node(s) need at least "
                         f"{FIXED_PORTS + nodes}")
    return lo, hi


def node_specs(count: int, cpu: str, memory: str, gpus: int, numa: int, dra_gpus: int = 0,
               dra_nics: int = 0) -> list[NodeSpec]:
    from central.resources.quantity import parse_quantity
    if not 1 <= count <= 5000:
        raise InputError("--nodes", f"expected 1..5000 simulated nodes, got {count}")
    for flag, value in (("--node-cpu", cpu), ("--node-memory", memory)):
        try:
            if parse_quantity(value) <= 0:
                raise ValueError
        except (ValueError, ArithmeticError, InputError):
            raise InputError(flag, f"expected a positive quantity, got {value!r}") from None
    if float(cpu) != int(float(cpu)):
        raise InputError("--node-cpu", f"expected whole CPUs, got {cpu!r}")
    if not 0 <= gpus <= 64:
        raise InputError("--node-gpus", f"expected 0..64, got {gpus}")
    for flag, devices in (("--node-dra-gpus", dra_gpus), ("--node-dra-nics", dra_nics)):
        if not 0 <= devices <= 64:
            raise InputError(flag, f"expected 0..64, got {devices}")
    if not 1 <= numa <= int(float(cpu)):
        raise InputError("--numa", f"expected 1..{int(float(cpu))} (at most one per CPU), got {numa}")
    return [NodeSpec(f"node-{i}", cpu=cpu, memory=memory, gpus=gpus, numa=numa, dra_gpus=dra_gpus, dra_nics=dra_nics)
            for i in range(1, count + 1)]


def run(args: argparse.Namespace) -> int:
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if args.build_only:
            for name, path in build.binaries(progress=say).items():
                print(f"{name}: {path}")
            return 0
        if args.dir is None:
            raise InputError("--dir", "the folder for the cluster is required")
        nodes = node_specs(args.nodes, args.node_cpu, args.node_memory, args.node_gpus, args.numa,
                           args.node_dra_gpus, args.node_dra_nics)
        conf = None
        if args.scheduler_conf:
            try:
                conf = args.scheduler_conf.read_text()
            except (OSError, UnicodeDecodeError) as err:
                raise InputError(f"--scheduler-conf {args.scheduler_conf}", f"cannot read: {err}") from None
        ports = port_range(args.port_range, len(nodes))
        if ports and args.port and not ports[0] <= args.port <= ports[1]:
            raise InputError("--port", f"{args.port} is outside --port-range {args.port_range}")
        cluster = up(args.dir.resolve(), nodes, args.port, agents=args.agents, scheduler_conf=conf, say=say,
                     port_range=ports)
    except (StartError, build.BuildError, ApiError) as err:
        print(f"caldera up: {err}", file=sys.stderr)
        return 2
    print(f"Caldera is running on a local cluster ({len(nodes)} simulated nodes). Try:\n"
          f"  export KUBECONFIG={cluster.kubeconfig}\n"
          f"  kubectl get nodes,queues\n"
          f"  kubectl apply -f examples/workloads/mpi.yaml\n"
          f"Logs: {cluster.dir / 'logs'}   Stop: caldera down --dir {cluster.dir}")
    return 0
