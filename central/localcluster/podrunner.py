"""A workload's pod template run as a local process, as a kubelet would run the pod (`caldera up`).

The container's command and arguments from the manifest (with `$(VAR)` expanded from its
env), its ConfigMap, Secret and projected ServiceAccount-token volumes materialised from the
apiserver under DIR/pods/, and its own ServiceAccount's token as its only credential. The
local adaptations: loopback addresses and ports (from the cluster's PortPool) instead of
container ports (`_localise`), and each agent
reading a simulated node's /sys and /proc (`start_agent`).
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

from central.kube.client import KubeClient
from central.localcluster import controlplane, install, synthhost
from central.localcluster.processes import Process, StartError, Supervisor
from central.localcluster.simkubelet import NodeSpec

NAMESPACE = "caldera-system"
REPO = Path(__file__).resolve().parents[2]
CALDERA = [sys.executable, "-m", "caldera"]
# the flag of each command's HTTP listener, whose default (all interfaces) suits a pod, not a host
LOOPBACK_FLAGS = {"scheduler": "--listen-address", "controllers": "--listen-address", "webhook": "--bind-address"}


class RunningCluster(Protocol):
    """What the runner needs of `up.Cluster` (which holds the runner): where the cluster lives,
    its API server, the ports its pods were given, the supervisor of its processes."""

    dir: Path
    server: str
    ports: dict[str, int]
    sup: Supervisor


class PodRunner:
    """Runs a workload's pod template as a local process, as a kubelet would run the pod."""

    def __init__(self, cluster: RunningCluster, admin: KubeClient, workloads: list[dict[str, Any]]):
        self.cluster, self.admin = cluster, admin
        self.workloads = {w["metadata"]["name"]: w for w in workloads}

    def _template(self, name: str) -> dict[str, Any]:
        obj = self.workloads[name]
        spec = obj["spec"]
        if obj["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        template: dict[str, Any] = spec["template"]["spec"]
        return template

    def _argv(self, pod: str, template: dict[str, Any], declared: dict[str, str], mounts: dict[str, Path],
              ports: dict[str, int], extra: list[str]) -> list[str]:
        """The container's command and args, `$(VAR)` expanded from its `declared` env, localised."""
        container = template["containers"][0]
        words = list(container.get("command") or []) + list(container.get("args") or [])
        if words[:1] != ["caldera"]:
            raise StartError(f"{pod}: the manifest's command {words[:2]} is not `caldera ...`")
        argv = CALDERA + [self._localise(pod, expand(w, declared), mounts, ports) for w in words[1:]]
        # a command whose manifest leaves its listen address to the default (0.0.0.0 in a pod)
        loopback = LOOPBACK_FLAGS.get(words[1] if len(words) > 1 else "")
        if loopback and not any(w.startswith(loopback + "=") for w in argv + extra):
            argv.append(f"{loopback}=127.0.0.1")
        return argv + extra

    def _declared_env(self, template: dict[str, Any], node_name: str = "") -> dict[str, str]:
        """The container's own env as a kubelet fills it in: plain values, downward-API fields
        (but for the pod's name: no Pod object stands behind a local process) and ConfigMap keys."""
        fields = {"metadata.name": "", "metadata.namespace": NAMESPACE, "spec.nodeName": node_name,
                  "status.podIP": "127.0.0.1"}  # every local process listens on loopback
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

    def _localise(self, pod: str, word: str, mounts: dict[str, Path], ports: dict[str, int]) -> str:
        flag, eq, value = word.partition("=")
        if eq and flag.endswith("address") and value == "0.0.0.0":
            return f"{flag}=127.0.0.1"  # every local listener on loopback
        if eq and (flag.endswith("port") or value.startswith("0.0.0.0:")):
            chosen = ports.get(flag) or self.cluster.ports.get(f"{pod}:{flag}") or self.cluster.sup.ports.take()
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
        declared = self._declared_env(template)
        argv = self._argv(name, template, declared, mounts, {},
                          [f"--kubeconfig={self._kubeconfig(name, account)}", *(extra or [])])
        log = self.cluster.dir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120,
                                  env={**checkout_env(), **declared})
        if done.returncode != 0:
            raise StartError(f"the {name} Job failed (exit {done.returncode}); log: {log}")

    def start(self, name: str, extra: list[str] | None = None, ports: dict[str, int] | None = None,
              process_name: str | None = None) -> Process:
        template = self._template(name)
        process_name = process_name or name
        mounts, account = self._materialise(process_name, template)
        declared = self._declared_env(template)
        argv = self._argv(process_name, template, declared, mounts, ports or {},
                          [f"--kubeconfig={self._kubeconfig(process_name, account)}", *(extra or [])])
        env = {**checkout_env(), **declared}
        return self.cluster.sup.start(process_name, argv, env=env)

    def start_agent(self, node: NodeSpec) -> Process:
        """The DaemonSet's pod on `node`: its host paths are the simulated node's trees."""
        name = f"caldera-nodeagent-{node.name}"
        template = self._template("caldera-nodeagent")
        host_root = self.cluster.dir / "nodes" / node.name
        paths = synthhost.write_host(host_root, int(float(node.cpu)), node.memory, node.numa)
        host = {"/sys": host_root / "sys", "/proc": host_root / "proc", "/sys/fs/cgroup": host_root / "cgroup",
                "/sys/fs/cgroup/kubepods.slice": host_root / "cgroup" / "kubepods.slice",
                "/var/lib/kubelet/pod-resources": host_root / "kubelet" / "pod-resources"}
        mounts, account = self._materialise(name, template, token_node=node.name, host=host)
        exporter = self.cluster.sup.ports.take()
        self.cluster.ports[f"{name}:exporter"] = exporter
        kube_token = install.service_account_token(self.admin, NAMESPACE, account, controlplane.ISSUER,
                                                   bound_node=node.name)
        (host_root / "kube-token").write_text(kube_token)
        identity = mounts["/var/run/secrets/caldera"]
        settings = {
            "node.name": node.name, "stream.token_file": str(identity / "token"),
            "stream.ca_file": str(identity / "ca.crt"), **paths, "collect.gpu": "false", "pods.source": "apiserver",
            "kube.api_url": self.cluster.server, "kube.token_file": str(host_root / "kube-token"),
            "kube.ca_file": str(self.cluster.dir / "pki" / "ca.crt"),
            "stream.server": f"127.0.0.1:{self.cluster.ports['caldera-scheduler:--agent-address']}",
            "stream.server_name": "caldera-scheduler.caldera-system.svc",
            "exporter.address": "127.0.0.1", "exporter.port": str(exporter),
        }
        container = template["containers"][0]
        words = list(container.get("command") or [])
        declared = self._declared_env(template, node_name=node.name)
        argv = CALDERA + [self._localise(name, expand(w, declared), mounts, {}) for w in words[1:]]
        argv += [f"--{key}={value}" for key, value in settings.items()]
        env = {**checkout_env(), **declared}
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
