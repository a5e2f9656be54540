"""`caldera up` / `caldera down`: a real local cluster with Caldera installed, for a person to
try Caldera and for the end-to-end suite.

`up` builds (once) and starts etcd, kube-apiserver and kube-controller-manager on loopback,
installs Caldera from `daemonset/` as the install docs say, and then runs every Caldera
workload of those manifests as a local process, the way a kubelet would run its pod: the
container's command and arguments from the manifest, its ConfigMap, Secret and projected
ServiceAccount-token volumes materialised from the apiserver under DIR/pods/, and its own
ServiceAccount's token as its only credential. The local adaptations are few and visible in
`_LOCAL`: loopback ports instead of container ports, the webhook reached by URL, and each
agent reading a simulated node's /sys and /proc. Simulated kubelets register the nodes.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from central.errors import InputError
from central.kube.client import ApiError, KubeClient
from central.localcluster import build, controlplane, install, synthhost
from central.localcluster.processes import Process, StartError, Supervisor, alive, free_port
from central.localcluster.simkubelet import RBAC as SIMKUBELET_RBAC
from central.localcluster.simkubelet import NodeSpec

NAMESPACE = "caldera-system"
REPO = Path(__file__).resolve().parents[2]
CALDERA = [sys.executable, "-m", "caldera"]


@dataclass
class Cluster:
    """What `up` started: where to reach it, and the supervisor that stops it."""

    dir: Path
    server: str
    kubeconfig: Path
    nodes: list[NodeSpec]
    sup: Supervisor
    ports: dict[str, int] = field(default_factory=dict)
    runner: "_PodRunner | None" = None

    def admin(self) -> KubeClient:
        return KubeClient.connect(str(self.kubeconfig), qps=1000, burst=1000)

    def start(self, workload: str, process_name: str | None = None) -> Process:
        """Start (again) a replica of a workload of daemonset/; a name it ran under before keeps
        its ports, so agents and probes find a restarted scheduler where they found it."""
        assert self.runner is not None
        proc = self.runner.start(workload, process_name=process_name)
        port = self.ports.get(f"{proc.name}:--listen-port")
        if port:
            self.sup.wait_ready(proc, lambda: _http_ok(port, "/healthz"), 60)
        return proc

    def process(self, name: str) -> Process:
        return next(p for p in self.sup.procs if p.name == name)


SCHEDULER_CONFIGMAP = ("volcano-scheduler-configmap", "volcano-scheduler.conf")


def up(directory: Path, nodes: list[NodeSpec], port: int = 0, manifests: Path | None = None,
       agents: bool = True, scheduler_conf: str | None = None, say=print, controllers: bool = True,
       kcm_controllers: str = controlplane.CONTROLLERS) -> Cluster:
    """Start everything; on any failure stop what was started and raise StartError/BuildError.
    With no `nodes` no simulated kubelet runs (the caller registers nodes, as `bench --e2e`);
    without `controllers` Caldera's controllers are not started."""
    sup = Supervisor(directory)
    if any(alive(p.pid) for p in sup.procs):
        raise StartError(f"{directory} already holds a running cluster; `caldera down --dir {directory}` first")
    if (directory / "state.json").exists():  # left by a cluster whose processes are gone: start afresh
        down(directory)
        sup = Supervisor(directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return _up(sup, nodes, port, manifests or install.repo_manifests(), agents, scheduler_conf, say,
                   controllers, kcm_controllers)
    except BaseException:
        sup.stop_all()
        raise


def _up(sup: Supervisor, nodes: list[NodeSpec], port: int, manifests: Path, agents: bool,
        scheduler_conf: str | None, say, controllers: bool, kcm_controllers: str) -> Cluster:
    started = time.monotonic()
    bins = build.binaries(progress=say)
    say("starting etcd, kube-apiserver and kube-controller-manager ...")
    endpoints = controlplane.start(sup, bins, port, kcm_controllers)
    cluster = Cluster(sup.dir, endpoints.apiserver, sup.dir / "kubeconfig", nodes, sup)
    admin = cluster.admin()
    discovery = install.Discovery(admin)
    for obj in SIMKUBELET_RBAC:
        install.apply(admin, discovery, obj)

    say(f"installing Caldera from {manifests} ...")
    webhook_port = free_port()
    configmaps = {SCHEDULER_CONFIGMAP[0]: {SCHEDULER_CONFIGMAP[1]: scheduler_conf}} if scheduler_conf else None
    workloads = install.install(admin, manifests, configmaps)
    runner = cluster.runner = _PodRunner(cluster, admin, workloads)
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
    webhook = runner.start("caldera-admission", extra=[f"--webhook-url=https://127.0.0.1:{webhook_port}",
                                                       "--bind-address=127.0.0.1"],
                           ports={"--port": webhook_port})
    sup.wait_ready(webhook, lambda: _webhooks_have_ca(admin), 60)
    if controllers:
        proc = runner.start("caldera-controllers")
        sup.wait_ready(proc, lambda: _http_ok(cluster.ports["caldera-controllers:--listen-port"], "/readyz"), 60)
    scheduler = runner.start("caldera-scheduler")
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


class _PodRunner:
    """Runs a workload's pod template as a local process, as a kubelet would run the pod."""

    def __init__(self, cluster: Cluster, admin: KubeClient, workloads: list[dict[str, Any]]):
        self.cluster, self.admin = cluster, admin
        self.workloads = {w["metadata"]["name"]: w for w in workloads}

    def _template(self, name: str) -> dict[str, Any]:
        obj = self.workloads[name]
        spec = obj["spec"]
        if obj["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        return spec["template"]["spec"]

    def _argv(self, pod: str, template: dict[str, Any], mounts: dict[str, Path], ports: dict[str, int],
              extra: list[str], node_name: str = "") -> list[str]:
        container = template["containers"][0]
        words = list(container.get("command") or []) + list(container.get("args") or [])
        if words[:1] != ["caldera"]:
            raise StartError(f"{pod}: the manifest's command {words[:2]} is not `caldera ...`")
        declared = self._declared_env(template, node_name)
        argv = CALDERA + [self._localise(pod, expand(w, declared), mounts, ports) for w in words[1:]]
        return argv + extra

    def _declared_env(self, template: dict[str, Any], node_name: str = "") -> dict[str, str]:
        """The container's own env as a kubelet fills it in: plain values, downward-API fields
        (but for the pod's name: no Pod object stands behind a local process) and ConfigMap keys."""
        fields = {"metadata.name": "", "metadata.namespace": NAMESPACE, "spec.nodeName": node_name}
        env = {}
        for var in template["containers"][0].get("env") or []:
            source = var.get("valueFrom") or {}
            if "value" in var:
                env[var["name"]] = var["value"]
            elif "fieldRef" in source:
                env[var["name"]] = fields.get(source["fieldRef"]["fieldPath"], "")
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                configmap = self.admin.get_or_none(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{ref['name']}") or {}
                if ref["key"] not in (configmap.get("data") or {}):
                    raise StartError(f"env {var['name']}: ConfigMap {NAMESPACE}/{ref['name']} has no key {ref['key']}")
                env[var["name"]] = configmap["data"][ref["key"]]
        return env

    def _env(self, template: dict[str, Any], node_name: str = "") -> dict[str, str]:
        return {**checkout_env(), **self._declared_env(template, node_name)}

    def _localise(self, pod: str, word: str, mounts: dict[str, Path], ports: dict[str, int]) -> str:
        flag, eq, value = word.partition("=")
        if eq and (flag.endswith("port") or value.startswith("0.0.0.0:")):
            chosen = ports.get(flag) or self.cluster.ports.get(f"{pod}:{flag}") or free_port()
            self.cluster.ports[f"{pod}:{flag}"] = chosen
            return f"{flag}={chosen}" if flag.endswith("port") else f"{flag}=127.0.0.1:{chosen}"
        for mount_path, local in sorted(mounts.items(), key=lambda m: -len(m[0])):
            target = value if eq else word
            if target == mount_path or target.startswith(mount_path.rstrip("/") + "/"):
                replaced = str(local) + target[len(mount_path.rstrip("/")):]
                return f"{flag}={replaced}" if eq else replaced
        return word

    def _materialise(self, pod: str, template: dict[str, Any], token_node: str | None = None,
                     host: dict[str, Path] | None = None) -> tuple[dict[str, Path], str]:
        """Volumes -> local folders, keyed by their mount path; and the ServiceAccount."""
        ns = NAMESPACE
        account = template.get("serviceAccountName", "default")
        root = self.cluster.dir / "pods" / pod
        volumes = {v["name"]: v for v in template.get("volumes") or []}
        mounts: dict[str, Path] = {}
        for mount in template["containers"][0].get("volumeMounts") or []:
            volume = volumes[mount["name"]]
            local = root / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            if "configMap" in volume:
                cm = self.admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/{volume['configMap']['name']}") or {}
                for key, text in (cm.get("data") or {}).items():
                    (local / key).write_text(text)
            elif "secret" in volume:
                self._secret_files(local, volume["secret"].get("secretName", ""), None)
            elif "projected" in volume:
                for source in volume["projected"].get("sources", []):
                    if "serviceAccountToken" in source:
                        sat = source["serviceAccountToken"]
                        token = install.service_account_token(self.admin, ns, account, sat.get("audience")
                                                              or controlplane.ISSUER, bound_node=token_node)
                        (local / sat["path"]).write_text(token)
                    elif "secret" in source:
                        self._secret_files(local, source["secret"]["name"], source["secret"].get("items"))
            elif "hostPath" in volume and host is not None:
                local = host[volume["hostPath"]["path"]]
            mounts[mount["mountPath"]] = local
        return mounts, account

    def _secret_files(self, local: Path, name: str, items: list[dict[str, str]] | None) -> None:
        secret = self.admin.get_or_none(f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}") or {}
        data = secret.get("data") or {}
        for item in items or [{"key": k, "path": k} for k in data]:
            if item["key"] in data:
                target = local / item["path"]
                target.write_bytes(base64.b64decode(data[item["key"]]))
                target.chmod(0o600)

    def _kubeconfig(self, pod: str, account: str) -> Path:
        token = install.service_account_token(self.admin, NAMESPACE, account, controlplane.ISSUER)
        return controlplane.write_kubeconfig(self.cluster.dir / "kubeconfigs" / pod, self.cluster.server,
                                             self.cluster.dir / "pki" / "ca.crt", token=token, namespace=NAMESPACE)

    def run_job(self, name: str, extra: list[str] | None = None) -> None:
        """Run a Job's pod to completion (as the Job controller and a kubelet would)."""
        template = self._template(name)
        mounts, account = self._materialise(name, template)
        argv = self._argv(name, template, mounts, {}, [f"--kubeconfig={self._kubeconfig(name, account)}", *(extra or [])])
        log = self.cluster.dir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120,
                                  env=self._env(template))
        if done.returncode != 0:
            raise StartError(f"the {name} Job failed (exit {done.returncode}); log: {log}")

    def start(self, name: str, extra: list[str] | None = None, ports: dict[str, int] | None = None,
              process_name: str | None = None):
        template = self._template(name)
        process_name = process_name or name
        mounts, account = self._materialise(process_name, template)
        argv = self._argv(process_name, template, mounts, ports or {},
                          [f"--kubeconfig={self._kubeconfig(process_name, account)}", *(extra or [])])
        env = self._env(template)
        return self.cluster.sup.start(process_name, argv, env=env)

    def start_agent(self, node: NodeSpec):
        """The DaemonSet's pod on `node`: its host paths are the simulated node's trees."""
        name = f"caldera-nodeagent-{node.name}"
        template = self._template("caldera-nodeagent")
        host_root = self.cluster.dir / "nodes" / node.name
        paths = synthhost.write_host(host_root, int(float(node.cpu)), node.memory, node.numa)
        host = {"/sys": host_root / "sys", "/proc": host_root / "proc", "/sys/fs/cgroup": host_root / "cgroup",
                "/var/lib/kubelet": host_root / "kubelet"}
        mounts, account = self._materialise(name, template, token_node=node.name, host=host)
        exporter = free_port()
        self.cluster.ports[f"{name}:exporter"] = exporter
        kube_token = install.service_account_token(self.admin, NAMESPACE, account, controlplane.ISSUER,
                                                   bound_node=node.name)
        (host_root / "kube-token").write_text(kube_token)
        identity = mounts["/var/run/secrets/caldera"]
        settings = {
            "node.name": node.name, "stream.token_file": str(identity / "token"), "stream.ca_file": str(identity / "ca.crt"), **paths, "collect.gpu": "false", "pods.source": "apiserver",
            "kube.api_url": self.cluster.server, "kube.token_file": str(host_root / "kube-token"),
            "kube.ca_file": str(self.cluster.dir / "pki" / "ca.crt"),
            "stream.server": f"127.0.0.1:{self.cluster.ports['caldera-scheduler:--agent-address']}",
            "stream.server_name": "caldera-scheduler.caldera-system.svc",
            "exporter.address": "127.0.0.1", "exporter.port": str(exporter),
        }
        container = template["containers"][0]
        words = list(container.get("command") or [])
        argv = CALDERA + [self._localise(name, w, mounts, {}) for w in words[1:]]
        argv += [f"--{key}={value}" for key, value in settings.items()]
        env = self._env(template, node_name=node.name)
        return self.cluster.sup.start(name, argv, env=env)


def checkout_env() -> dict[str, str]:
    """This environment, with this checkout first on the path: the processes `up` starts run
    the code `up` is part of (a worktree, a clone), whatever is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def expand(word: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of an argument: $(VAR) is the container's VAR where it has one
    (else left as written), $$ is a literal $."""
    return REFERENCE.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), word)


def _http_ok(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:  # noqa: S310
            return resp.status == 200
    except OSError:
        return False


def _nodes_schedulable(admin: KubeClient, nodes: list[NodeSpec]) -> bool:
    """Every node Ready and free of the not-ready taint the apiserver puts on a new Node."""
    listing = admin.get("/api/v1/nodes?labelSelector=caldera.sh%2Fsimulated%3Dtrue")
    ready = {n["metadata"]["name"] for n in listing.get("items", [])
             if not (n["spec"].get("taints"))
             and any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))}
    return all(n.name in ready for n in nodes)


def _webhooks_have_ca(admin: KubeClient) -> bool:
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        listing = admin.get(f"/apis/admissionregistration.k8s.io/v1/{kind}")
        for config in listing.get("items", []):
            if config["metadata"]["name"].startswith("caldera"):
                if not all(h["clientConfig"].get("caBundle") and h["clientConfig"].get("url")
                           for h in config.get("webhooks", [])):
                    return False
    return True


def down(directory: Path) -> int:
    """Stop every process `up` recorded in DIR and remove DIR's state; safe on a half-started
    or missing DIR. Returns how many processes were stopped."""
    sup = Supervisor(directory)
    count = len(sup.procs)
    sup.stop_all()
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
    parser.add_argument("--numa", type=int, default=2, help="NUMA nodes per node (default 2)")
    parser.add_argument("--port", type=int, default=0, help="kube-apiserver's port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--scheduler-conf", type=Path, help="a volcano-scheduler.conf to install instead of the manifests' one")
    parser.add_argument("--no-agents", dest="agents", action="store_false", help="do not start node agents")
    parser.add_argument("--build-only", action="store_true", help="build the control plane's binaries and exit")


def node_specs(count: int, cpu: str, memory: str, gpus: int, numa: int) -> list[NodeSpec]:
    from central.api.quantity import parse_quantity
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
    if not 1 <= numa <= int(float(cpu)):
        raise InputError("--numa", f"expected 1..{int(float(cpu))} (at most one per CPU), got {numa}")
    return [NodeSpec(f"node-{i}", cpu=cpu, memory=memory, gpus=gpus, numa=numa) for i in range(1, count + 1)]


def run(args: argparse.Namespace) -> int:
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if args.build_only:
            for name, path in build.binaries(progress=say).items():
                print(f"{name}: {path}")
            return 0
        if args.dir is None:
            raise InputError("--dir", "the folder for the cluster is required")
        nodes = node_specs(args.nodes, args.node_cpu, args.node_memory, args.node_gpus, args.numa)
        conf = None
        if args.scheduler_conf:
            try:
                conf = args.scheduler_conf.read_text()
            except (OSError, UnicodeDecodeError) as err:
                raise InputError(f"--scheduler-conf {args.scheduler_conf}", f"cannot read: {err}") from None
        cluster = up(args.dir.resolve(), nodes, args.port, agents=args.agents, scheduler_conf=conf, say=say)
    except (StartError, build.BuildError, ApiError) as err:
        print(f"caldera up: {err}", file=sys.stderr)
        return 2
    print(f"Caldera is running on a local cluster ({len(nodes)} simulated nodes). Try:\n"
          f"  export KUBECONFIG={cluster.kubeconfig}\n"
          f"  kubectl get nodes,queues\n"
          f"  kubectl apply -f examples/workloads/mpi.yaml\n"
          f"Logs: {cluster.dir / 'logs'}   Stop: caldera down --dir {cluster.dir}")
    return 0
