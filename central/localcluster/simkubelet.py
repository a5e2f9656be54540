"""Simulated kubelets: what `caldera up`'s nodes do instead of running containers (as KWOK).

For every simulated node, the one process registers the Node (capacity, Ready, addresses),
renews its Lease in `kube-node-lease` every 10 s (the node lifecycle controller taints a node
whose Lease stops), and plays the kubelet's part for the pods bound to it:
- a pod starts once its volumes exist (a PersistentVolumeClaim must be Bound, a ConfigMap or
  Secret must exist, as the kubelet waits for them) and its ResourceClaims are allocated to the
  node and reserved for it (`simdra`: nodes with DRA devices publish them as a driver would),
  then runs with a pod IP;
- it ends after its `sim.caldera.sh/duration` with exit code `sim.caldera.sh/exit-code`
  (default 0); `restartPolicy` Always/OnFailure restarts it;
- without that annotation each container lives as its command says (`podlife.init_runs`,
  `podlife.container_runs`): init containers one after the other while the pod is Pending,
  then the regular containers side by side, each restarted as `restartPolicy` says (after the
  kubelet's back-off); the pod ends once all have ended for good, Failed if any failed;
- with a hosts folder (the node agents' simulated /sys, /proc and cgroup trees), a running
  pod gets its cgroup v1 directories as a container runtime makes them, so the agent finds,
  measures and pins it; they go when the pod ends;
- a pod being deleted gracefully is stopped (containers terminated, phase Failed), then
  removed with grace period 0 and the pod's UID as precondition, as the kubelet confirms.
It runs as its own identity with its own ClusterRole (see `RBAC`), never as an admin.
"""

from __future__ import annotations

import argparse
import heapq
import ipaddress
import itertools
import json
import logging
import shutil
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from central.errors import InputError
from central.kube.client import ApiError, KubeClient
from central.kube.informer import Reflector, object_key
from central.localcluster import simdra, versions
from central.model import podlife
from central.model.commandrun import Run

log = logging.getLogger("simkubelet")

LEASE_SECONDS = 40
RENEW_EVERY = 10.0
RECHECK_EVERY = 1.0
TERM_EXIT_CODE = 143  # SIGTERM
POD_NETWORK = ipaddress.ip_network("10.128.0.0/9")
GPU_CARD_MIB = 16384

RBAC = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "caldera-local:simkubelet"},
     "rules": [
         {"apiGroups": [""], "resources": ["nodes"], "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
         {"apiGroups": [""], "resources": ["nodes/status", "pods/status"], "verbs": ["patch"]},
         {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
         {"apiGroups": [""], "resources": ["persistentvolumeclaims", "configmaps", "secrets"], "verbs": ["get"]},
         # the simulated DRA driver (`simdra`): its slices and classes, and the claims it "prepares"
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices", "deviceclasses"], "verbs": ["create"]},
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
         {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "update"]},
         {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "caldera-local:simkubelet"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "caldera-local:simkubelet"},
     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "caldera-local:simkubelet"}]},
]


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: str = "32"
    memory: str = "128Gi"
    gpus: int = 0
    numa: int = 1
    pods: int = 110
    taints: tuple[dict[str, str], ...] = ()  # the Node's own, as a kubelet's --register-with-taints
    dra_gpus: int = 0  # devices the simulated DRA driver publishes in a ResourceSlice (`simdra`)
    dra_nics: int = 0

    def manifest(self) -> dict[str, Any]:
        capacity = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods), "ephemeral-storage": "100Gi"}
        if self.gpus:  # whole cards for the device plugin, and Volcano's gpushare resources
            capacity.update({"nvidia.com/gpu": str(self.gpus), "volcano.sh/gpu-number": str(self.gpus),
                             "volcano.sh/gpu-memory": str(self.gpus * GPU_CARD_MIB)})
        return {"apiVersion": "v1", "kind": "Node", **({"spec": {"taints": list(self.taints)}} if self.taints else {}),
                "metadata": {"name": self.name,
                             "labels": {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux",
                                        "kubernetes.io/arch": "amd64", "caldera.sh/simulated": "true"}},
                "status": {"capacity": capacity, "allocatable": capacity}}


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimKubelet:
    def __init__(self, kube: KubeClient, nodes: list[NodeSpec], workers: int = 8, hosts: Path | None = None):
        self.kube = kube
        self.hosts = hosts
        self.nodes = {n.name: n for n in nodes}
        first = ipaddress.ip_address("10.127.0.1")
        self.host_ips = {n.name: str(first + i) for i, n in enumerate(nodes)}
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="simkubelet")
        self._timers: list[tuple[float, int, str, str]] = []  # (when, seq, pod key, action)
        self._seq = itertools.count()
        self._wake = threading.Condition()
        self._busy: set[str] = set()  # pod keys with an action in flight: one at a time per pod
        self._planned: dict[str, tuple[Any, ...]] = {}  # pod key -> the container ends already on the timers
        self._ips = iter(POD_NETWORK.hosts())
        self._stop = threading.Event()
        self.pods = Reflector(kube, "/api/v1/pods", self._on_pod, query={"fieldSelector": "spec.nodeName!="})
        self.claims = simdra.FakePrepare(kube)

    # --- nodes -------------------------------------------------------------------------------

    def register(self) -> None:
        """Create (or refresh) every Node and its Lease, Ready."""
        list(self.pool.map(self._register, self.nodes.values()))

    def _register(self, spec: NodeSpec) -> None:
        body = spec.manifest()
        try:
            self.kube.create("/api/v1/nodes", body)
        except ApiError as err:
            if err.code != 409:
                raise
        stamp = now()
        address = self.host_ips[spec.name]
        status = dict(body["status"],
                      conditions=[_condition("Ready", "True", "KubeletReady", stamp, heartbeat=True),
                                  *(_condition(t, "False", "KubeletHas" + r, stamp, heartbeat=True) for t, r in
                                    (("MemoryPressure", "SufficientMemory"), ("DiskPressure", "NoDiskPressure"),
                                     ("PIDPressure", "SufficientPID")))],
                      addresses=[{"type": "InternalIP", "address": address},
                                 {"type": "Hostname", "address": spec.name}],
                      nodeInfo={"kubeletVersion": versions.KUBERNETES, "kubeProxyVersion": versions.KUBERNETES,
                                "operatingSystem": "linux", "architecture": "amd64",
                                "containerRuntimeVersion": "sim://1", "osImage": "caldera simulated node",
                                "kernelVersion": "", "machineID": spec.name, "systemUUID": spec.name,
                                "bootID": spec.name})
        self.kube.merge_patch(f"/api/v1/nodes/{spec.name}/status", {"status": status})
        if spec.dra_gpus or spec.dra_nics:
            simdra.publish(self.kube, spec.name, spec.dra_gpus, spec.dra_nics, spec.numa)
        self._renew(spec.name)

    def _renew(self, node: str) -> None:
        url = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {"holderIdentity": node, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": stamp}
        lease = self.kube.get_or_none(url)
        if lease is None:
            node_obj = self.kube.get(f"/api/v1/nodes/{node}")
            self.kube.create("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node, "namespace": "kube-node-lease",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                                  "uid": node_obj["metadata"]["uid"]}]},
                "spec": spec})
        else:
            lease["spec"].update(spec)
            self.kube.request("PUT", url, body=lease)

    def _heartbeats(self) -> None:
        while not self._stop.wait(RENEW_EVERY):
            for node in self.nodes:
                self.pool.submit(self._guard, self._renew, node)

    # --- pods --------------------------------------------------------------------------------

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._planned.pop(object_key(pod), None)
        elif pod["spec"].get("nodeName") in self.nodes:
            self._schedule(0.0, object_key(pod), "sync")

    def _schedule(self, delay: float, key: str, action: str) -> None:
        with self._wake:
            heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), key, action))
            self._wake.notify()

    def _timer_loop(self) -> None:
        while not self._stop.is_set():
            with self._wake:
                while not self._timers or self._timers[0][0] > time.monotonic():
                    wait = self._timers[0][0] - time.monotonic() if self._timers else 1.0
                    self._wake.wait(min(max(wait, 0.0), 1.0))
                    if self._stop.is_set():
                        return
                _, _, key, action = heapq.heappop(self._timers)
                if key in self._busy:  # let the action in flight finish first
                    heapq.heappush(self._timers, (time.monotonic() + 0.05, next(self._seq), key, action))
                    continue
                self._busy.add(key)
            self.pool.submit(self._run_action, key, action)

    def _run_action(self, key: str, action: str) -> None:
        try:
            pod = self.pods.objects.get(key)
            if pod is not None:
                self._guard(self._sync if action == "sync" else self._exit, pod)
        finally:
            with self._wake:
                self._busy.discard(key)

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except InputError as err:
            log.warning("%s", err)
        except ApiError as err:
            if err.code not in (404, 409):
                log.warning("%s: %s", getattr(fn, "__name__", fn), err)
        except Exception:  # a simulated kubelet keeps going, as a real one does
            log.exception("simulated kubelet action failed")

    def _sync(self, pod: dict[str, Any]) -> None:
        meta, status = pod["metadata"], pod.get("status", {})
        key = object_key(pod)
        if meta.get("deletionTimestamp"):
            self._terminate(pod)
            return
        if status.get("phase") in ("Succeeded", "Failed"):
            return
        if status.get("phase") == "Running" or _running_init(pod) is not None:
            self._plan_exit(pod)  # e.g. after a restart of this process
            return
        missing = self._missing_volume(pod)
        if not missing and pod["spec"].get("resourceClaims"):
            missing = self.claims.unprepared(pod)
        if missing:
            if not _waiting(status):
                self._patch_status(pod, {"phase": "Pending", "containerStatuses": _containers(
                    pod, {"waiting": {"reason": "ContainerCreating", "message": missing}}, ready=False)})
            self._schedule(RECHECK_EVERY, key, "sync")
            return
        stamp = now()
        host_ip = self.host_ips[pod["spec"]["nodeName"]]
        pod_ip = str(next(self._ips))
        addresses = {"hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
                     "startTime": stamp}
        if podlife.pod_duration(pod) is None and any(run != Run(0.0) for _, run in podlife.init_runs(pod)):
            self._plan_exit(self._start_init(pod, 0, addresses))
            return
        self._start_containers(pod, addresses)

    def _start_containers(self, pod: dict[str, Any], extra: dict[str, Any]) -> None:
        """Init containers done: the regular containers run."""
        stamp = now()
        running = self._patch_status(pod, {
            "phase": "Running", **extra,
            "conditions": [_condition(t, "True", None, stamp) for t in
                           ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "initContainerStatuses": _containers(pod, {"terminated": {"exitCode": 0, "reason": "Completed",
                                                                      "startedAt": stamp, "finishedAt": stamp}},
                                                 ready=False, init=True),
            "containerStatuses": _containers(pod, {"running": {"startedAt": stamp}}, ready=True)})
        self._cgroups(running, create=True)
        self._plan_exit(running)

    def _cgroups(self, pod: dict[str, Any], create: bool) -> None:
        """The pod's cgroup v1 directories under the node's simulated cgroup tree."""
        if self.hosts is None:
            return
        root = self.hosts / pod["spec"]["nodeName"] / "cgroup"
        if not root.is_dir():
            return
        qos = (pod.get("status") or {}).get("qosClass", "BestEffort")
        tier = "kubepods" if qos == "Guaranteed" else f"kubepods/{qos.lower()}"
        node = self.nodes[pod["spec"]["nodeName"]]
        cpus = f"0-{int(float(node.cpu)) - 1}"
        for controller, files in (("cpuset", {"cpuset.cpus": cpus, "cpuset.mems": f"0-{node.numa - 1}"}),
                                  ("cpuacct", {"cpuacct.usage": "0"}),
                                  ("cpu", {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000", "cpu.shares": "1024"}),
                                  ("memory", {"memory.usage_in_bytes": "0", "memory.stat": "cache 0\ntotal_inactive_file 0\n",
                                              "memory.limit_in_bytes": "9223372036854771712"})):
            pod_dir = root / controller / tier / f"pod{pod['metadata']['uid']}"
            if not create:
                shutil.rmtree(pod_dir, ignore_errors=True)
                continue
            for directory in (pod_dir, *(pod_dir / c["name"] for c in pod["spec"].get("containers") or [])):
                directory.mkdir(parents=True, exist_ok=True)
                for name, text in files.items():
                    (directory / name).write_text(text + "\n")

    def _plan_exit(self, pod: dict[str, Any]) -> None:
        duration = podlife.pod_duration(pod)
        if duration is None:
            due = _due_containers(pod)
            key = object_key(pod)
            # every status update syncs: plan each end once (a container is its name and restart)
            plan = tuple(sorted((name, count, when) for name, _, when, count in due))
            if due and self._planned.get(key) != plan:
                self._planned[key] = plan
                self._schedule(max(0.0, min(when for _, _, when, _ in due) - time.time()), key, "exit")
            return
        started = _parse_time(_last_start(pod) or pod["status"].get("startTime"))
        left = max(0.0, duration - (time.time() - started)) if started else duration
        self._schedule(left, object_key(pod), "exit")

    def _exit(self, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            return
        if podlife.pod_duration(pod) is None:
            self._exit_commands(pod)
            return
        if pod["status"].get("phase") != "Running":
            return
        code = podlife.pod_exit_code(pod)
        policy = pod["spec"].get("restartPolicy", "Always")
        stamp = now()
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                      "startedAt": _last_start(pod) or stamp, "finishedAt": stamp}
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            restarted = self._patch_status(pod, {"containerStatuses": _containers(
                pod, {"running": {"startedAt": stamp}}, ready=True, last={"terminated": terminated}, restart=True)})
            self._plan_exit(restarted)
            return
        self._cgroups(pod, create=False)
        self._patch_status(pod, {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [_condition(t, "False", "PodCompleted", stamp) for t in ("Ready", "ContainersReady")],
            "containerStatuses": _containers(pod, {"terminated": terminated}, ready=False)})

    # --- containers that live as their commands say ------------------------------------------------

    def _start_init(self, pod: dict[str, Any], index: int, extra: dict[str, Any]) -> dict[str, Any]:
        """Init container `index` runs; those before it completed, the pod is Pending."""
        stamp = now()
        statuses = [_status(pod, name, {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp,
                                                       "finishedAt": stamp}} if i < index else
                            {"running": {"startedAt": stamp}} if i == index else
                            {"waiting": {"reason": "PodInitializing"}}, init=True)
                    for i, (name, _) in enumerate(podlife.init_runs(pod))]
        return self._patch_status(pod, {
            "phase": "Pending", **extra,
            "conditions": [_condition("Initialized", "False", "ContainersNotInitialized", stamp),
                           _condition("Ready", "False", "ContainersNotInitialized", stamp),
                           _condition("ContainersReady", "False", "ContainersNotInitialized", stamp),
                           _condition("PodReadyToStartContainers", "True", None, stamp),
                           _condition("PodScheduled", "True", None, stamp)],
            "initContainerStatuses": statuses,
            "containerStatuses": _containers(pod, {"waiting": {"reason": "PodInitializing"}}, ready=False)})

    def _exit_commands(self, pod: dict[str, Any]) -> None:
        """The containers whose command has run its course end now: restarted, or for good."""
        meta = pod["metadata"]  # read afresh: the watch may not have brought our last update yet
        pod = self.kube.get(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}")
        if pod["metadata"]["uid"] != meta["uid"] or pod["metadata"].get("deletionTimestamp"):
            return
        status = pod.get("status") or {}
        if status.get("phase") not in ("Pending", "Running"):
            return
        clock, stamp = time.time(), now()
        policy = podlife.restart_policy(pod)
        init = _running_init(pod)
        ended = [(name, run) for name, run, when, _ in _due_containers(pod) if when <= clock]
        if not ended:  # an end planned twice: the first one did the work and planned the next
            return
        if init is not None:
            name, run = ended[0]
            if run.exit_code == 0:
                names = [n for n, _ in podlife.init_runs(pod)]
                if names.index(name) + 1 < len(names):
                    self._plan_exit(self._start_init(pod, names.index(name) + 1, {}))
                else:
                    self._start_containers(pod, {})
                return
        by_name = {c["name"]: c for c in status.get("initContainerStatuses" if init else "containerStatuses") or []}
        for name, run in ended:
            previous = by_name[name]
            terminated = {"exitCode": run.exit_code, "reason": "Completed" if run.exit_code == 0 else "Error",
                          "startedAt": previous["state"]["running"]["startedAt"], "finishedAt": stamp}
            if podlife.restarts(policy, run.exit_code):
                by_name[name] = {**previous, "state": {"running": {"startedAt": stamp}}, "lastState": {
                    "terminated": terminated}, "restartCount": previous.get("restartCount", 0) + 1,
                    "containerID": f"sim://{pod['metadata']['uid']}/{name}/{previous.get('restartCount', 0) + 1}"}
            else:
                by_name[name] = {**previous, "state": {"terminated": terminated}, "ready": False, "started": False}
        statuses = list(by_name.values())
        field = "initContainerStatuses" if init else "containerStatuses"
        codes = [c["state"]["terminated"]["exitCode"] for c in statuses if "terminated" in c["state"]]
        if init is not None and any(codes):  # an init container failed for good: so does the pod
            self._finish(pod, "Failed", {field: statuses})
        elif init is None and len(codes) == len(statuses):
            self._finish(pod, "Failed" if any(codes) else "Succeeded", {field: statuses})
        else:
            ready = all("running" in c["state"] for c in statuses) or init is not None
            patch: dict[str, Any] = {field: statuses}
            if not ready:
                patch["conditions"] = [_condition(t, "False", "ContainersNotReady", stamp)
                                       for t in ("Ready", "ContainersReady")]
            self._plan_exit(self._patch_status(pod, patch))

    def _finish(self, pod: dict[str, Any], phase: str, statuses: dict[str, Any]) -> None:
        self._cgroups(pod, create=False)
        self._patch_status(pod, {"phase": phase, **statuses, "conditions": [
            _condition(t, "False", "PodCompleted", now()) for t in ("Ready", "ContainersReady")]})

    def _terminate(self, pod: dict[str, Any]) -> None:
        meta, status = pod["metadata"], pod.get("status", {})
        self._cgroups(pod, create=False)
        if status.get("phase") not in ("Succeeded", "Failed"):
            stamp = now()
            self._patch_status(pod, {"phase": "Failed", "containerStatuses": _containers(
                pod, {"terminated": {"exitCode": TERM_EXIT_CODE, "reason": "Error",
                                     "startedAt": _last_start(pod) or stamp, "finishedAt": stamp}}, ready=False)})
        self.kube.request("DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                          body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                "preconditions": {"uid": meta["uid"]}})

    def _missing_volume(self, pod: dict[str, Any]) -> str | None:
        ns = pod["metadata"]["namespace"]
        for volume in pod["spec"].get("volumes") or []:
            if "persistentVolumeClaim" in volume:
                name = volume["persistentVolumeClaim"].get("claimName", "")
                pvc = self.kube.get_or_none(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")
                if pvc is None or pvc.get("status", {}).get("phase") != "Bound":
                    return f"PersistentVolumeClaim {ns}/{name} is not bound"
            for field, resource, name_key in (("configMap", "configmaps", "name"), ("secret", "secrets", "secretName")):
                source = volume.get(field)
                if source and not source.get("optional"):
                    name = source.get(name_key, "")
                    if self.kube.get_or_none(f"/api/v1/namespaces/{ns}/{resource}/{name}") is None:
                        return f"{field} {ns}/{name} not found"
        return None

    def _patch_status(self, pod: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = pod["metadata"]
        return self.kube.merge_patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                                     {"metadata": {"uid": meta["uid"]}, "status": status})

    # --- run ---------------------------------------------------------------------------------

    def run(self) -> None:
        self.register()
        self.pods.start()
        threading.Thread(target=self._heartbeats, name="leases", daemon=True).start()
        self._timer_loop()

    def stop(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        self.pods.stop()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _condition(kind: str, value: str, reason: str | None, stamp: str, heartbeat: bool = False) -> dict[str, Any]:
    """A pod condition, or with `heartbeat` a node condition (those carry lastHeartbeatTime)."""
    cond = {"type": kind, "status": value, "lastTransitionTime": stamp}
    if heartbeat:
        cond["lastHeartbeatTime"] = stamp
    if reason:
        cond["reason"] = reason
    return cond


def _containers(pod: dict[str, Any], state: dict[str, Any], ready: bool, init: bool = False,
                last: dict[str, Any] | None = None, restart: bool = False) -> list[dict[str, Any]]:
    field = "initContainers" if init else "containers"
    previous = {c["name"]: c for c in pod.get("status", {}).get("initContainerStatuses" if init else "containerStatuses") or []}
    out = []
    for c in pod["spec"].get(field) or []:
        count = previous.get(c["name"], {}).get("restartCount", 0) + (1 if restart else 0)
        status = {"name": c["name"], "image": c.get("image", ""), "imageID": "sim://" + c.get("image", ""),
                  "containerID": f"sim://{pod['metadata']['uid']}/{c['name']}/{count}",
                  "ready": ready, "started": "running" in state, "restartCount": count, "state": state}
        if last:
            status["lastState"] = last
        out.append(status)
    return out


def _status(pod: dict[str, Any], name: str, state: dict[str, Any], init: bool = False) -> dict[str, Any]:
    """One container's status in `state`, keeping the restart count it had."""
    field = "initContainerStatuses" if init else "containerStatuses"
    previous = {c["name"]: c for c in pod.get("status", {}).get(field) or []}.get(name, {})
    spec = {c["name"]: c for c in pod["spec"].get("initContainers" if init else "containers") or []}[name]
    count = previous.get("restartCount", 0)
    return {"name": name, "image": spec.get("image", ""), "imageID": "sim://" + spec.get("image", ""),
            "containerID": f"sim://{pod['metadata']['uid']}/{name}/{count}", "ready": False,
            "started": "running" in state, "restartCount": count, "state": state}


def _running_init(pod: dict[str, Any]) -> str | None:
    """The init container running now, if the pod is still initializing."""
    if pod.get("status", {}).get("phase") != "Pending":
        return None
    for c in pod.get("status", {}).get("initContainerStatuses") or []:
        if "running" in (c.get("state") or {}):
            return str(c["name"])
    return None


def _due_containers(pod: dict[str, Any]) -> list[tuple[str, Run, float, int]]:
    """The running containers (the init container, while one runs) whose command ends by itself,
    each with its run and the time it ends: its start plus its run, or plus the kubelet's
    restart back-off when that is longer (10 s doubling to 5 min), so a crash loop stays slow;
    and its restart count."""
    init = _running_init(pod) is not None
    runs = dict(podlife.init_runs(pod) if init else podlife.container_runs(pod))
    out = []
    for c in pod.get("status", {}).get("initContainerStatuses" if init else "containerStatuses") or []:
        run = runs.get(c["name"])
        started = _parse_time(((c.get("state") or {}).get("running") or {}).get("startedAt"))
        if run is None or run.seconds is None or started is None:
            continue
        count = c.get("restartCount", 0)
        backoff = min(10.0 * 2 ** (count - 1), 300.0) if count else 0.0
        out.append((c["name"], run, started + max(run.seconds, backoff), count))
    return out


def _waiting(status: dict[str, Any]) -> bool:
    return any("waiting" in (c.get("state") or {}) for c in status.get("containerStatuses") or [])


def _last_start(pod: dict[str, Any]) -> str | None:
    for c in pod.get("status", {}).get("containerStatuses") or []:
        running = (c.get("state") or {}).get("running")
        if running:
            started: str | None = running.get("startedAt")
            return started
    return None


def _parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="simkubelet", description="simulated kubelets for caldera up")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--nodes", required=True, help="JSON list of node specs (name, cpu, memory, gpus, numa, pods)")
    parser.add_argument("--hosts", type=Path, help="folder of the nodes' simulated host trees (HOSTS/NODE/cgroup)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    nodes = [NodeSpec(**n) for n in json.loads(args.nodes)]
    kubelet = SimKubelet(KubeClient.connect(args.kubeconfig, qps=500, burst=1000), nodes, hosts=args.hosts)
    try:
        kubelet.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
