"""numa-aware: CPUs of one NUMA node (or as few as possible) for Guaranteed pods that ask.

A pod takes part when it is Guaranteed and asks for whole CPUs. If it names a policy in
annotation `volcano.sh/numa-topology-policy` (best-effort, restricted, single-numa-node), as
in Volcano a node qualifies when its kubelet runs the static CPU manager with the same
topology-manager policy (from the node's agent report); the kubelet then pins the pod.
Beyond Volcano, a node whose kubelet CPU manager is `none` qualifies too: Caldera's agent
pins the pod to the chosen CPUs itself, and the CPUs its pinned pods hold count as taken.
A pod without a policy (or with `none`) is held, as in Volcano, to the policy of a node whose
kubelet runs the static CPU manager with a topology policy other than none (the kubelet
would refuse it otherwise); other nodes take it unchecked. Then:
- single-numa-node: one NUMA node must have the CPUs free;
- restricted: the fewest NUMA nodes that could ever hold the request must have them free now;
- best-effort: any NUMA nodes with enough free CPUs in total, the fewest preferred.
Score (pods that name a policy), Volcano's normalised one: with u the NUMA nodes the pod
would use on a candidate and U the most any candidate needs, 100 - 100 x u // U (100 for
all when U is 0), times argument `weight` (1).
The chosen CPUs and NUMA nodes are written on the pod (annotations `caldera.sh/cpuset`,
`caldera.sh/numa-nodes`); the agent pins the pod's cpuset when the kubelet does not.

Without a fresh report a node cannot prove a NUMA fit: pods with single-numa-node or
restricted skip it (the reason names the silent agent); best-effort and other pods pass.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check
from central.model.fields import parse_index_list
from central.model.nodedata import NodeData, NumaCell
from central.model.objects import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

POLICY = "volcano.sh/numa-topology-policy"
CPUSET = "caldera.sh/cpuset"
NUMA_NODES = "caldera.sh/numa-nodes"
POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
STRICT = ("restricted", "single-numa-node")
MAX_SCORE = 100


def cpu_list(cpus: set[int] | frozenset[int]) -> str:
    """Linux cpuset notation: 0-3,8,10-11."""
    out, ordered = [], sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def choose_cells(cells: list[tuple[NumaCell, set[int]]], want: int, policy: str) -> list[int] | None:
    """Positions of the NUMA cells to take `want` CPUs from, or None if the policy forbids.

    The fewest cells that hold the CPUs free now; ties go to the lowest ids, as the kubelet."""
    fewest_ever = next((k for k in range(1, len(cells) + 1)
                        if any(sum(len(cells[i][0].cpus) for i in combo) >= want
                               for combo in combinations(range(len(cells)), k))), None)
    for k in range(1, len(cells) + 1):
        if policy == "single-numa-node" and k > 1 or policy == "restricted" and k > (fewest_ever or 0):
            return None
        for combo in combinations(range(len(cells)), k):
            if sum(len(cells[i][1]) for i in combo) >= want:
                return list(combo)
    return None


class NumaAware(Plugin, ext.Predicate, ext.BatchNodeOrder, ext.AllocationEvents):
    name = "numa-aware"

    @classmethod
    def read_arguments(cls, args: Arguments) -> int:
        return args.get("weight", 1, int)

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.weight: int = self.settings
        # Per row: the policy its kubelet holds every Guaranteed whole-CPU pod to (None: none).
        self.node_policy = [self._row_policy("none", data) for data in handle.agents.data]
        self.node_holds = np.array([p is not None for p in self.node_policy], dtype=bool)
        self.taken: dict[int, set[int]] = {}  # row -> CPUs given out since the node's report
        self.choice: dict[str, tuple[int, list[int], set[int]]] = {}  # task uid -> (row, cells, cpus)
        # Pods not running yet are in no report; on nodes where our agent pins, the kubelet's
        # state does not show the running ones either.
        counted = list(handle.starting.values())
        for node in handle.nodes:
            data = handle.agents.data[node.index]
            if data is not None and data.cpu_manager_policy == "none":
                counted += [t for t in node.tasks.values() if t.status == TaskStatus.RUNNING]
        for task in counted:
            node = handle.nodes_by_name.get(task.node or "")
            data = handle.agents.data[node.index] if node is not None and CPUSET in task.annotations else None
            if data is not None and data.numa:  # without a report, nothing here reads the node's CPUs
                where = f"Pod {task.uid}: metadata.annotations[{CPUSET}]"
                try:
                    cpus = parse_index_list(task.annotations[CPUSET], where, cpu_count(data))
                except InputError as err:  # a placed pod: reported; the CPUs it claims are unknown
                    handle.fault_task(task, err, self.name)
                    continue
                self.taken.setdefault(node.index, set()).update(cpus)

    def _wants(self, task: TaskInfo) -> tuple[str, int] | None:
        """(the pod's own policy, or "none" when it names none, whole CPUs) for a Guaranteed
        whole-CPU pod; None when NUMA placement does not concern it."""
        policy = task.annotations.get(POLICY, "none")
        cpu = float(task.resreq[0])
        if policy not in POLICIES or not task.template.guaranteed or cpu % 1000 or cpu <= 0:
            return None
        return policy, int(cpu // 1000)

    @staticmethod
    def _row_policy(policy: str, data: NodeData | None) -> str | None:
        """The policy a node holds the pod to, or None when the node does not check it."""
        if policy != "none":
            return policy if data is not None and _enforced(data, policy) else None
        if data is not None and data.cpu_manager_policy == "static" and data.topology_manager_policy in STRICT + ("best-effort",):
            return data.topology_manager_policy
        return None

    def _cells(self, row: int, data: NodeData) -> list[tuple[NumaCell, set[int]]]:
        taken = self.taken.get(row, set())
        return [(cell, set(cell.free_cpus) - taken) for cell in data.numa]

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        wants = self._wants(task)
        if wants is None:
            return []
        policy, cpus = wants
        view = self.handle.agents
        if policy == "none":  # only nodes whose kubelet holds it to a policy check it
            ok = np.ones(len(rows), dtype=bool)
            for i in np.flatnonzero(self.node_holds[rows]).tolist():
                held = int(rows[i])
                ok[i] = choose_cells(self._cells(held, view.data[held]), cpus, self.node_policy[held]) is not None
            return [Check(ok, f"node(s) didn't fit the node's NUMA policy for {cpus} CPUs")]
        ok = np.zeros(len(rows), dtype=bool)
        for i, at in enumerate(rows.tolist()):
            data = view.data[at]
            if data is None:
                ok[i] = policy not in STRICT
            elif _enforced(data, policy):
                ok[i] = choose_cells(self._cells(at, data), cpus, policy) is not None
        silent = view.silent[rows] & ~ok
        # Unresolvable, as Volcano's numa-aware says: its view of free CPUs ignores evictions.
        return [Check(ok | silent, f"node(s) didn't fit the {policy} NUMA policy for {cpus} CPUs"),
                Check(~silent, "node(s) whose agent stopped reporting (no fresh NUMA data)")]

    def batchable(self, task: TaskInfo) -> bool:
        return self._wants(task) is None  # NUMA placement does not concern it

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        wants = self._wants(task)
        if wants is None or wants[0] == "none" or not self.weight:
            return None
        policy, cpus = wants
        used = np.zeros(len(rows), dtype=np.int64)  # NUMA nodes the pod would use, 0 if unknown
        for i, row in enumerate(rows):
            data = self.handle.agents.data[row]
            if data is not None and data.numa:
                cells = choose_cells(self._cells(int(row), data), cpus, policy)
                used[i] = len(cells) if cells is not None else 0
        most = int(used.max()) if len(used) else 0
        scores = np.full(len(rows), MAX_SCORE) if most == 0 else MAX_SCORE - MAX_SCORE * used // most
        return scores.astype(float) * self.weight

    def on_allocate(self, task: TaskInfo) -> None:
        wants = self._wants(task)
        node = self.handle.nodes_by_name.get(task.node or "")
        data = self.handle.agents.data[node.index] if node is not None else None
        if wants is None or data is None or not data.numa:
            return
        policy, want = wants
        held = self._row_policy(policy, data)
        if held is None and policy == "none":
            return  # neither the pod nor the node asks for NUMA placement
        cells = self._cells(node.index, data)
        chosen = choose_cells(cells, want, held or policy)
        if chosen is None:
            return
        cpus: set[int] = set()
        for i in chosen:
            cpus.update(sorted(cells[i][1])[: want - len(cpus)])
        self.taken.setdefault(node.index, set()).update(cpus)
        self.choice[task.uid] = (node.index, chosen, cpus)
        self.handle.annotate(task, CPUSET, cpu_list(cpus))
        self.handle.annotate(task, NUMA_NODES, ",".join(str(cells[i][0].id) for i in chosen))

    def on_deallocate(self, task: TaskInfo) -> None:
        choice = self.choice.pop(task.uid, None)
        if choice is not None:
            row, _, cpus = choice
            self.taken[row] -= cpus
            self.handle.annotate(task, CPUSET, None)
            self.handle.annotate(task, NUMA_NODES, None)


def _enforced(data: NodeData, policy: str) -> bool:
    """Will the pod's NUMA policy hold on this node: the kubelet's (static CPU manager with the
    same topology policy, as Volcano) or our agent's (CPU manager none: the agent pins)."""
    static = data.cpu_manager_policy == "static" and data.topology_manager_policy == policy
    return static or data.cpu_manager_policy == "none"


MAX_CPUS = 8192  # Linux's NR_CPUS ceiling: a report naming more is not believed


def cpu_count(data: NodeData) -> int:
    """CPU ids on the node run below this (from its NUMA cells): what bounds a cpuset."""
    return min(max((max(cell.cpus, default=-1) for cell in data.numa), default=-1) + 1, MAX_CPUS)
