"""Builders of the Kubernetes and Volcano objects tests feed in, as the plain dicts the API
server would hold. One function per kind; every field is a keyword with a plain default, so a
test names only what it is about: `pod("p1", group="g", node="n1", phase="Running")`.

Defaults are the ones most tests were written against: a Pod `default/p` asking one CPU of the
`volcano` scheduler, a Node with 8 CPUs, 16Gi and room for 110 pods, a Job `ml/train` with a
`ps` and two `worker`s in queue `default`, a PodGroup `ml/pg` of one member. Where a keyword
may be None (a namespace, a queue, a resource), None leaves its field out, for tests about
objects that lack it.

Builders whose output differs in what the code under test reads keep their own names:
`listed_pod` (a pod as a node agent lists it, with the kubelet's status) and `simulated_job`
(a Job whose pods carry the simulator's run time and exit code)."""

from __future__ import annotations

from typing import Any

GROUP_NAME = "scheduling.k8s.io/group-name"
SIM_DURATION = "sim.caldera.sh/duration"
SIM_EXIT_CODE = "sim.caldera.sh/exit-code"
VOLCANO_BATCH = "batch.volcano.sh/v1alpha1"
VOLCANO_SCHEDULING = "scheduling.volcano.sh/v1beta1"
VOLCANO_TOPOLOGY = "topology.volcano.sh/v1alpha1"


def container(name: str = "main", image: str = "busybox", *, requests: dict[str, Any] | None = None,
              limits: dict[str, Any] | None = None) -> dict[str, Any]:
    """A container; `resources` only when it asks for something."""
    resources = {**({"requests": dict(requests)} if requests is not None else {}),
                 **({"limits": dict(limits)} if limits else {})}
    return {"name": name, "image": image, **({"resources": resources} if resources else {})}


def pod(name: str = "p", namespace: str | None = "default", *, scheduler: str = "volcano", group: str | None = None,
        node: str | None = None, phase: str | None = None, cpu: Any = "1", requests: dict[str, Any] | None = None,
        limits: dict[str, Any] | None = None, annotations: dict[str, str] | None = None, uid: str | None = None,
        owners: list[dict[str, Any]] | None = None, containers: list[dict[str, Any]] | None = None,
        **spec: Any) -> dict[str, Any]:
    """A Pod of `scheduler` with one container `c` asking `cpu` (or exactly `requests`; cpu=None
    asks nothing), in PodGroup `group` when given, bound to `node` when given; `spec` adds
    fields to the pod's spec (priorityClassName=...)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if uid is not None:
        metadata["uid"] = uid
    metadata["annotations"] = {**(annotations or {}), **({GROUP_NAME: group} if group else {})}
    if owners is not None:
        metadata["ownerReferences"] = owners
    if containers is None:
        asked = requests if requests is not None else None if cpu is None else {"cpu": cpu}
        containers = [container("c", requests=asked, limits=limits)]
    out: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": {"schedulerName": scheduler, **({"nodeName": node} if node else {}), "containers": containers, **spec}}
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def listed_pod(name: str, *, qos_class: str | None = "BestEffort", level: str | None = None, phase: str = "Running",
               **spec: Any) -> dict[str, Any]:
    """A pod as a node agent reads it from a pod list: a uid, a resourceVersion, the QoS class
    the kubelet wrote in its status, `level` as its volcano.sh/qos-level, and only the spec
    fields given (the agent derives QoS from containers only when the status has none)."""
    annotations = {} if level is None else {"volcano.sh/qos-level": level}
    status = {"phase": phase, **({"qosClass": qos_class} if qos_class else {})}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "annotations": annotations,
                         "resourceVersion": "1"}, "spec": spec, "status": status}


def node(name: str = "n1", *, cpu: Any = "8", memory: str | None = "16Gi", pods: Any = 110,
         labels: dict[str, str] | None = None, gpus: int | None = None) -> dict[str, Any]:
    """A Node with `cpu`, `memory`, `gpus` (nvidia.com/gpu) and room for `pods` allocatable
    (None leaves one out)."""
    allocatable = {k: str(v) for k, v in (("cpu", cpu), ("memory", memory), ("pods", pods), ("nvidia.com/gpu", gpus))
                   if v is not None}
    metadata: dict[str, Any] = {"name": name, **({"labels": labels} if labels is not None else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "status": {"allocatable": allocatable}}


def podgroup(name: str = "pg", namespace: str = "ml", *, queue: str | None = "default", min_member: int = 1,
             **spec: Any) -> dict[str, Any]:
    """A PodGroup of `min_member` in `queue` (None: no queue named, the default applies)."""
    return {"apiVersion": VOLCANO_SCHEDULING, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
            "spec": {**({"queue": queue} if queue is not None else {}), "minMember": min_member, **spec}}


def queue(name: str = "default", *, parent: str | None = None, state: str | None = None,
          annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A Queue; `spec` is its spec as given (weight=1, capability={...}), plus `parent`."""
    metadata: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations is not None else {})}
    out: dict[str, Any] = {"apiVersion": VOLCANO_SCHEDULING, "kind": "Queue", "metadata": metadata,
                           "spec": {**spec, **({"parent": parent} if parent else {})}}
    if state:
        out["status"] = {"state": state}
    return out


def task(name: str = "worker", replicas: int = 1, *, cpu: Any = None, restart_policy: str | None = "Never",
         pod_annotations: dict[str, str] | None = None, pod_spec: dict[str, Any] | None = None,
         **extra: Any) -> dict[str, Any]:
    """One task of a Job: `replicas` pods of one container (asking `cpu` when given), with
    `pod_spec` added to the template's spec and `extra` to the task (policies=..., minAvailable=...)."""
    template_spec: dict[str, Any] = {"containers": [container(requests=None if cpu is None else {"cpu": cpu})]}
    if restart_policy is not None:
        template_spec["restartPolicy"] = restart_policy
    template: dict[str, Any] = {"spec": {**template_spec, **(pod_spec or {})}}
    if pod_annotations is not None:
        template["metadata"] = {"annotations": pod_annotations}
    return {"name": name, "replicas": replicas, "template": template, **extra}


def job(name: str = "train", namespace: str | None = "ml", *, queue: str | None = "default",
        tasks: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    """A Volcano Job of `tasks` (a `ps` and two `worker`s unless given) in `queue` (None: none
    named); `spec` adds spec fields (minAvailable=..., policies=...)."""
    metadata: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace is not None else {})}
    body = {**({"queue": queue} if queue is not None else {}),
            "tasks": tasks if tasks is not None else [task("ps"), task("worker", 2)], **spec}
    return {"apiVersion": VOLCANO_BATCH, "kind": "Job", "metadata": metadata, "spec": body}


def simulated_job(name: str, replicas: int = 1, *, min_available: int | None = None, duration: str | None = "10m",
                  exit_code: int | None = None, cpu: str = "1", policies: Any = (),
                  **annotations: str) -> dict[str, Any]:
    """A one-task Job for the simulator: `replicas` pods named `<name>-main-<i>`, each running
    for `duration` and exiting with `exit_code`, with retries allowed twice; it carries a uid,
    as no API server gives it one there."""
    pod_annotations = {SIM_DURATION: duration} if duration else {}
    if exit_code is not None:
        pod_annotations[SIM_EXIT_CODE] = str(exit_code)
    main = {"name": "main", "replicas": replicas, "template": {
        "metadata": {"annotations": pod_annotations},
        "spec": {"containers": [container("c", "x", requests={"cpu": cpu, "memory": "1Gi"})]}}}
    return {"apiVersion": VOLCANO_BATCH, "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "uid": name, "annotations": annotations},
            "spec": {"minAvailable": replicas if min_available is None else min_available, "queue": "default",
                     "maxRetry": 2, "policies": list(policies), "tasks": [main]}}


def hypernode(name: str = "rack-1", tier: Any = 1, members: Any = None) -> dict[str, Any]:
    """A HyperNode of `tier` over `members` (node-1 alone unless given)."""
    return {"apiVersion": VOLCANO_TOPOLOGY, "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [exact("node-1")] if members is None else members}}


def member(kind: str = "Node", **selector: Any) -> dict[str, Any]:
    """A HyperNode member of `kind` chosen by `selector` (exactMatch=, regexMatch=, labelMatch=)."""
    return {"type": kind, "selector": selector}


def exact(name: str, kind: str = "Node") -> dict[str, Any]:
    """A HyperNode member naming one Node (or HyperNode) exactly."""
    return member(kind, exactMatch={"name": name})


def claim(name: str = "data", namespace: str = "ml", *, storage: str = "1Gi", storage_class: str | None = "local",
          volume: str | None = None, modes: tuple[str, ...] = ("ReadWriteOnce",), selected_node: str | None = None,
          selector: dict[str, Any] | None = None) -> dict[str, Any]:
    """A PersistentVolumeClaim asking `storage` of `storage_class`, Bound to `volume` when given."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                                "annotations": {"volume.kubernetes.io/selected-node": selected_node} if selected_node else {}}
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": storage}},
                            **({"storageClassName": storage_class} if storage_class is not None else {}),
                            **({"volumeName": volume} if volume else {}), **({"selector": selector} if selector else {})}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec,
            "status": {"phase": "Bound" if volume else "Pending"}}


def volume(name: str = "pv", *, storage: str = "1Gi", storage_class: str = "local", node: str | None = None,
           modes: tuple[str, ...] = ("ReadWriteOnce",), claim_ref: str | None = None, csi_driver: str | None = None,
           labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A PersistentVolume of `storage_class`, reachable from `node` only when given (a local
    volume), claimed by `claim_ref` ("ns/name") when given, a CSI volume of `csi_driver` when given."""
    spec: dict[str, Any] = {"capacity": {"storage": storage}, "accessModes": list(modes), "storageClassName": storage_class}
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    if claim_ref:
        namespace, claim_name = claim_ref.split("/")
        spec["claimRef"] = {"namespace": namespace, "name": claim_name}
    if csi_driver:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": f"handle-{name}"}
    else:
        spec["local"] = {"path": f"/mnt/{name}"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"phase": "Bound" if claim_ref else "Available"}}


def storage_class(name: str = "local", *, provisioner: str = "kubernetes.io/no-provisioner",
                  mode: str = "WaitForFirstConsumer", zones: list[str] | None = None) -> dict[str, Any]:
    """A StorageClass; `zones` become its allowedTopologies (topology.kubernetes.io/zone)."""
    out: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                           "provisioner": provisioner, "volumeBindingMode": mode}
    if zones is not None:
        out["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": zones}]}]
    return out


def csinode(node: str = "n1", **limits: int) -> dict[str, Any]:
    """A CSINode: each keyword a driver (underscores for dots) and its attach limit."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": d.replace("_", "."), "nodeID": node, "allocatable": {"count": n}}
                                 for d, n in limits.items()]}}
