"""The e2e bench's workloads as API objects: the session benchmark's mixed cluster, and
Volcano's own benchmark cases (`benchmark/testcases` in its repository) translated to data.

Volcano's cases, as its benchmark runs them:
- gang (`gang/cases/case-template.yaml` with its Makefile's defaults JOBS=10 REPLICAS=100
  MIN_AVAILABLE=100): jobs of one task of 100 replicas, 1 CPU / 1 GiB each, gang of 100;
- gang-net-topo (`gang/cases/net-topo.yaml`): jobs of 50 replicas, gang of 50, hard network
  topology with highestTierAllowed 2, on nodes in 4 racks under 2 spines (HyperNodes as its
  `create-hypernodes.sh` makes them);
- gang-comprehensive (`gang/cases/comprehensive.yaml`): a master of 100m / 100Mi and 10
  workers of 50m / 50Mi, gang of 10;
- pod (`pod/cases/case-template.yaml`): bare pods of 1 CPU / 1 GiB, no PodGroup.
Their nodes are the ones its `create-kwok-nodes.sh` makes (32 CPU, 256 GiB, 110 pods, label
type=kwok, taint kwok.x-k8s.io/node) and every pod selects and tolerates them. A case's shape
is fixed; the size sets the number of nodes and of jobs (pods / pods per job, as Volcano's JOBS).

Volcano's benchmark submits gang cases as Volcano Jobs; here each job is what its job
controller would make of it, a PodGroup (minMember, minResources, queue, networkTopology) and
its pods annotated with their group and task, so every scheduler sees the same objects and no
controller's pod creation rate is measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from central.bench.synthetic import synthetic_cluster
from central.resources.quantity import parse_quantity

if TYPE_CHECKING:  # the API client it pulls in is imported only when a run starts (`caldera bench` imports CASES)
    from central.localcluster.simkubelet import NodeSpec

NAMESPACE = "bench"
MIXED = "mixed"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
RACKS, SPINES = 4, 2  # create-kwok-nodes.sh's ENABLE_TOPOLOGY defaults


@dataclass(frozen=True)
class Task:
    name: str
    replicas: int
    cpu: str
    memory: str


@dataclass(frozen=True)
class Case:
    """One of Volcano's benchmark cases. `min_available` None: bare pods (the pod case)."""

    name: str
    source: str  # the case file in Volcano's repository
    tasks: tuple[Task, ...]
    min_available: int | None = None
    queue: str = "default"
    topology: dict[str, Any] | None = None  # the PodGroup's spec.networkTopology

    @property
    def pods_per_job(self) -> int:
        return sum(t.replicas for t in self.tasks)


CASES = {c.name: c for c in (
    Case("gang", "testcases/gang/cases/case-template.yaml", (Task("worker", 100, "1", "1Gi"),), min_available=100),
    Case("gang-net-topo", "testcases/gang/cases/net-topo.yaml", (Task("worker", 50, "1", "1Gi"),), min_available=50,
         topology={"mode": "hard", "highestTierAllowed": 2}),
    Case("gang-comprehensive", "testcases/gang/cases/comprehensive.yaml",
         (Task("master", 1, "100m", "100Mi"), Task("worker", 10, "50m", "50Mi")), min_available=10),
    Case("pod", "testcases/pod/cases/case-template.yaml", (Task("pod-test", 1, "1", "1Gi"),)),
)}
CASE_NAMES = (MIXED, *CASES)


@dataclass
class Workload:
    name: str
    nodes: list[NodeSpec]
    queues: list[dict[str, Any]]
    podgroups: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # patched on after registration
    hypernodes: list[dict[str, Any]] = field(default_factory=list)


def workload(nodes: int, pods: int, case: str = MIXED) -> Workload:
    """The objects of `case` at this size (a gang case rounds pods down to whole jobs, at least one)."""
    if case == MIXED:
        return mixed(nodes, pods)
    return volcano_case(CASES[case], nodes, pods)


def objects(work: Workload) -> list[dict[str, Any]]:
    """The workload as the API objects a cache reads (the session benchmark's input): its nodes
    with their labels, queues, HyperNodes, PodGroups and pending pods."""
    nodes = []
    for spec in work.nodes:
        node = spec.manifest()
        node["metadata"]["labels"].update(work.node_labels.get(spec.name, {}))
        nodes.append(node)
    pods = [{**pod, "status": {"phase": "Pending"}} for pod in work.pods]
    return [*nodes, *work.queues, *work.hypernodes, *work.podgroups, *pods]


def mixed(nodes: int, pods: int) -> Workload:
    """The session benchmark's cluster as API objects."""
    from central.localcluster.simkubelet import NodeSpec

    out = Workload(MIXED, [], [], [], [])
    for obj in synthetic_cluster(nodes, pods):
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Node":
            alloc = obj["status"]["allocatable"]
            out.nodes.append(NodeSpec(meta["name"], cpu=alloc["cpu"], memory=alloc["memory"],
                                      gpus=int(alloc.get("nvidia.com/gpu", 0)),
                                      taints=tuple(obj["spec"].get("taints") or ())))
        elif kind == "Queue":
            out.queues.append(_queue(meta["name"], obj["spec"]))
        elif kind == "PodGroup":
            out.podgroups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                  "metadata": meta, "spec": obj["spec"]})
        elif kind == "Pod":
            for container in obj["spec"]["containers"]:  # the API wants extended resources' limits = requests
                resources = container["resources"]
                extended = {k: v for k, v in resources["requests"].items() if "/" in k}
                if extended:
                    resources["limits"] = extended
            out.pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": obj["spec"]})
    return out


def volcano_case(case: Case, nodes: int, pods: int) -> Workload:
    out = Workload(case.name, kwok_nodes(nodes), [_queue(case.queue, {"weight": 1, "reclaimable": True})], [], [])
    for node in out.nodes:
        out.node_labels[node.name] = {"type": "kwok"}
    if case.topology:
        rack_of = racks(nodes)
        for name, rack in zip((n.name for n in out.nodes), rack_of):
            out.node_labels[name].update({"topology-rack": f"rack-{rack}", "topology-spine": f"spine-{rack // (RACKS // SPINES)}"})
        out.hypernodes = hypernodes()
    if case.min_available is None:
        out.pods = [_pod(f"{case.name}-{i}", case.tasks[0], {}) for i in range(pods)]
        return out
    for job in range(max(1, pods // case.pods_per_job)):
        name = f"{case.name}-{job}"
        members = [(task, f"{name}-{task.name}-{i}") for task in case.tasks for i in range(task.replicas)]
        spec: dict[str, Any] = {"minMember": case.min_available, "queue": case.queue,
                                "minResources": min_resources([t for t, _ in members[:case.min_available]])}
        if case.topology:
            spec["networkTopology"] = dict(case.topology)
        out.podgroups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                              "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
        out.pods.extend(_pod(pod, task, {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": task.name,
                                         "volcano.sh/job-name": name}) for task, pod in members)
    return out


def kwok_nodes(count: int) -> list[NodeSpec]:
    """create-kwok-nodes.sh's nodes (its defaults: 32 CPU, 256 GiB, 110 pods, tainted)."""
    from central.localcluster.simkubelet import NodeSpec

    return [NodeSpec(f"kwok-node-{i}", cpu="32", memory="256Gi", pods=110, taints=(KWOK_TAINT,)) for i in range(count)]


def racks(count: int) -> list[int]:
    """The rack of each of `count` nodes: consecutive runs of count / RACKS (the remainder in
    the last rack, where the script would leave them out)."""
    per_rack = max(1, count // RACKS)
    return [min(i // per_rack, RACKS - 1) for i in range(count)]


def hypernodes() -> list[dict[str, Any]]:
    """create-hypernodes.sh's fabric: a tier-1 HyperNode per rack selecting its nodes by label,
    a tier-2 one per spine over its racks."""
    def hypernode(name: str, tier: int, tier_name: str, members: list[dict[str, Any]]) -> dict[str, Any]:
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                "spec": {"tier": tier, "tierName": tier_name, "members": members}}
    per_spine = RACKS // SPINES
    out = [hypernode(f"rack-{r}", 1, "rack", [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {
        "type": "kwok", "topology-rack": f"rack-{r}"}}}}]) for r in range(RACKS)]
    out += [hypernode(f"spine-{s}", 2, "spine", [{"type": "HyperNode", "selector": {"exactMatch": {"name": f"rack-{r}"}}}
                                                 for r in range(s * per_spine, (s + 1) * per_spine)])
            for s in range(SPINES)]
    return out


def min_resources(tasks: list[Task]) -> dict[str, str]:
    """The sum of the first minAvailable pods' requests, as Volcano's job controller sets a
    PodGroup's minResources (in task order)."""
    cpu = sum((parse_quantity(t.cpu) for t in tasks), Decimal(0))
    memory = sum((parse_quantity(t.memory) for t in tasks), Decimal(0))
    return {"cpu": f"{int(cpu * 1000)}m", "memory": str(int(memory))}


def _queue(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _pod(name: str, task: Task, annotations: dict[str, str]) -> dict[str, Any]:
    resources = {"cpu": task.cpu, "memory": task.memory}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"volcano.sh/benchmark": "true"},
                         **({"annotations": annotations} if annotations else {})},
            "spec": {"schedulerName": "volcano", "nodeSelector": {"type": "kwok"}, "tolerations": [KWOK_TOLERATION],
                     "containers": [{"name": "main", "image": "busybox:1.36", "command": ["/bin/sh", "-c", "sleep 30"],
                                     "resources": {"requests": resources, "limits": resources}}]}}
