"""predicates: kube-scheduler's filters, vectorised over node rows.

Static filters depend only on the pod template and the nodes (unschedulable, node selector
and required node affinity, taints), so they are computed once per template per session.
Dynamic ones (host ports, required inter-pod affinity and anti-affinity, topology spread with
DoNotSchedule) depend on where pods are placed and run only for templates that use them.
Status as kube-scheduler gives it: node state the pod cannot change (unschedulable, selector
and affinity, taints, a required pod affinity no pod satisfies, a node without a spread
constraint's topology label) is unresolvable; a port in use, an anti-affinity peer or a
skew that evicting pods could fix is unschedulable. Pods evicted in this session no longer
count (Volcano removes them from its node view on eviction).
Volumes (VolumeBinding, VolumeZone, NodeVolumeLimits) are `central.plugins.volumebinding`:
a pod's claims filter its nodes, and its placement takes their volumes for the session.
Arguments: `predicate.<Name>Enable` for NodeAffinity, NodePorts, TaintToleration,
PodAffinity, PodTopologySpread, VolumeBinding, VolumeZone, NodeVolumeLimits (all true).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.framework import extension as ext
from central.framework.nodeindex import (
    UNSCHEDULABLE_TAINT,
    NodeIndex,
    domain_counts,
    placed_tasks,
    term_rows,
    untolerated,
)
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check, Code
from central.model.objects import TERMINATED_STATUSES, PodTemplate, TaskInfo, TaskStatus
from central.plugins.dynamicresources import DeviceAllocator
from central.plugins.volumebinding import VolumeBinder

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption


def node_affinity_mask(index: NodeIndex, template: PodTemplate) -> np.ndarray:
    ok = np.ones(index.n, dtype=bool)
    for key, value in template.node_selector:
        ok &= index.label(key) == value
    if template.required_node_terms:
        any_term = np.zeros(index.n, dtype=bool)
        for term in template.required_node_terms:
            if term.requirements:  # an empty term matches nothing
                any_term |= index.matches(term)
        ok &= any_term
    return ok


class Predicates(Plugin, ext.StaticPredicate, ext.Predicate, ext.AllocationEvents, ext.SessionClose):
    name = "predicates"
    closes_by_state = True  # its last word settles devices: no condition
    rows_by_table = True  # its template filters read the node index only
    # a run holds only pods it finds batchable: no claims it binds, no devices, so on_allocate
    # reads the task and this plugin's own sets alone
    events_in_runs = True

    @classmethod
    def read_arguments(cls, args: Arguments) -> dict[str, bool]:
        # Volcano's cache toggle: accepted for compatibility (no cache to switch).
        args.accept("predicate.CacheEnable")
        on = {name: args.get(f"predicate.{name}Enable", True, bool)
              for name in ("NodeAffinity", "NodePorts", "TaintToleration", "PodAffinity", "PodTopologySpread",
                           "VolumeBinding", "VolumeZone", "NodeVolumeLimits")}
        # off by default, as in Volcano
        on["DynamicResourceAllocation"] = args.get("predicate.DynamicResourceAllocationEnable", False, bool)
        # claims take devices on the NUMA nodes numa-aware gave the pod's CPUs first (off: as listed)
        on["DRANUMAPreference"] = args.get("predicate.DRANUMAPreferenceEnable", True, bool)
        return on

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.index = handle.node_index
        self.enabled: dict[str, bool] = self.settings
        # Placed pods with required anti-affinity: every incoming pod is checked against them;
        # one on a node the session does not know (gone, or not seen yet) has no domain to hold.
        nodes = handle.nodes_by_name
        self.anti_holders = {t.uid: t for t in handle.anti_affine.values()
                             if t.node in nodes and t.status not in TERMINATED_STATUSES}
        self.evicted: set[str] = set()  # tasks evicted in this session
        self._batchable: dict[PodTemplate, bool] = {}
        on = self.enabled
        self.volumes = VolumeBinder(handle, on["VolumeBinding"], on["VolumeZone"], on["NodeVolumeLimits"])
        self.devices = DeviceAllocator(handle, on["DRANUMAPreference"]) if on["DynamicResourceAllocation"] else None

    def on_allocate(self, task: TaskInfo) -> None:
        self.evicted.discard(task.uid)  # an eviction undone, or a placement
        if task.template.pod_anti_affinity and task.node:
            self.anti_holders[task.uid] = task
        if task.claims and self.volumes.wants(task):
            self.volumes.allocated(task)
        if task.device_claims and self.devices is not None:
            self.devices.allocated(task)

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.status == TaskStatus.RELEASING:
            self.evicted.add(task.uid)
        if task.uid in self.anti_holders and (task.node is None or task.status in (TaskStatus.PENDING, TaskStatus.RELEASING)):
            del self.anti_holders[task.uid]
        if task.claims and self.volumes.wants(task):
            self.volumes.deallocated(task)
        if task.device_claims and self.devices is not None:
            self.devices.deallocated(task)

    def on_session_close(self) -> None:
        if self.devices is not None:  # the devices of pods placed last: chosen, so their binds write them
            self.devices.settle()

    def batchable(self, task: TaskInfo) -> bool:
        """Without ports, inter-pod terms, spread or claims of its own, a pod's answers stay as
        they are while its twins are placed (pods with anti-affinity move only when placed;
        a placed twin may take the volume a claim would have had)."""
        if (task.claims and self.volumes.wants(task)) or (task.device_claims and self.devices is not None):
            return False
        template = task.template
        answer = self._batchable.get(template)
        if answer is None:
            on = self.enabled
            answer = self._batchable[template] = not (
                (template.host_ports and on["NodePorts"])
                or ((template.pod_affinity or template.pod_anti_affinity) and on["PodAffinity"])
                or (template.spread and on["PodTopologySpread"]))
        return answer

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        template = task.template
        checks: list[Check] = []
        if template.host_ports and self.enabled["NodePorts"]:
            checks.append(Check(self._ports_free(template, rows), "node(s) didn't have free ports for the requested pod ports",
                                Code.UNSCHEDULABLE))
        if self.enabled["PodAffinity"] and (template.pod_affinity or template.pod_anti_affinity or self.anti_holders):
            checks.extend(self._inter_pod(template, rows))
        if template.spread and self.enabled["PodTopologySpread"]:
            checks.extend(self._spread(template, rows))
        if task.claims and self.volumes.wants(task):
            checks.extend(self.volumes.checks(task, rows))
        if task.device_claims and self.devices is not None:
            checks.extend(self.devices.checks(task, rows))
        return checks

    def static_predicate(self, template: PodTemplate) -> list[Check]:
        """Unschedulable nodes, node selector and required node affinity, taints."""
        idx = self.index
        tolerations = template.tolerations
        unsched = idx.unschedulable & ~np.full(idx.n, any(t.tolerates(UNSCHEDULABLE_TAINT) for t in tolerations))
        checks = [Check(~unsched, "node(s) were unschedulable")]
        if self.enabled["NodeAffinity"]:
            checks.append(Check(node_affinity_mask(idx, template), "node(s) didn't match Pod's node affinity/selector"))
        if self.enabled["TaintToleration"]:
            bad = idx.per_taint_group(lambda taints: untolerated(taints, tolerations, ("NoSchedule", "NoExecute")))
            checks.append(Check(bad == 0, "node(s) had untolerated taint"))
        return checks

    def _ports_free(self, template: PodTemplate, rows: np.ndarray) -> np.ndarray:
        wanted = template.host_ports
        busy = set()
        for row, task in placed_tasks(self.handle.nodes, self.evicted):
            for proto, port, ip in task.template.host_ports:
                if any(p == proto and q == port and (i == ip or "0.0.0.0" in (i, ip)) for p, q, i in wanted):
                    busy.add(row)
        return np.fromiter((r not in busy for r in rows), bool, len(rows))

    def _inter_pod(self, template: PodTemplate, rows: np.ndarray) -> list[Check]:
        idx, nodes, ns = self.index, self.handle.nodes, template.namespace
        checks = []
        labels = template.label_map
        for term in template.pod_affinity:
            matching = term_rows(nodes, term, ns, self.evicted)
            if not matching and term.selects(ns, labels, ns):
                continue  # the first pod of a group that selects itself may go anywhere
            domains = set(domain_counts(idx, term.topology_key, matching))
            checks.append(Check(_in_domains(idx, term.topology_key, domains, rows), "node(s) didn't match pod affinity rules"))
        for term in template.pod_anti_affinity:
            domains = set(domain_counts(idx, term.topology_key, term_rows(nodes, term, ns, self.evicted)))
            checks.append(Check(~_in_domains(idx, term.topology_key, domains, rows), "node(s) didn't match pod anti-affinity rules",
                                Code.UNSCHEDULABLE))
        # Existing pods' anti-affinity toward this pod (symmetry).
        blocked = np.zeros(len(rows), dtype=bool)
        for task in self.anti_holders.values():  # evicted ones have left it
            row = self.handle.nodes_by_name[task.node].index
            for term in task.template.pod_anti_affinity:
                if term.selects(ns, labels, task.namespace):
                    value = idx.label(term.topology_key)[row]
                    if value is not None:
                        blocked |= idx.label(term.topology_key)[rows] == value
        if blocked.any():
            checks.append(Check(~blocked, "node(s) didn't satisfy existing pods anti-affinity rules", Code.UNSCHEDULABLE))
        return checks

    def _spread(self, template: PodTemplate, rows: np.ndarray) -> list[Check]:
        idx, nodes, ns = self.index, self.handle.nodes, template.namespace
        labelled = np.ones(len(rows), dtype=bool)
        skew_ok = np.ones(len(rows), dtype=bool)
        eligible = node_affinity_mask(idx, template)
        for c in template.spread:
            if c.when_unsatisfiable != "DoNotSchedule":
                continue
            values = idx.label(c.topology_key)
            matching = [row for row, task in placed_tasks(nodes, self.evicted)
                        if task.namespace == ns and c.selector.matches(task.template.label_map)]
            counts = domain_counts(idx, c.topology_key, matching)
            domains = {v for v, e in zip(values, eligible) if e and v is not None}
            minimum = min((counts.get(d, 0) for d in domains), default=0)
            self_match = 1 if c.selector.matches(template.label_map) else 0
            row_values = values[rows]
            labelled &= np.fromiter((v is not None for v in row_values), bool, len(rows))
            skew_ok &= np.fromiter(
                (v is None or counts.get(v, 0) + self_match - minimum <= c.max_skew for v in row_values),
                bool, len(rows))
        return [Check(labelled, "node(s) didn't match pod topology spread constraints (missing required label)"),
                Check(skew_ok, "node(s) didn't match pod topology spread constraints", Code.UNSCHEDULABLE)]

def _in_domains(idx: NodeIndex, key: str, domains: set[object], rows: np.ndarray) -> np.ndarray:
    values = idx.label(key)[rows]
    return np.fromiter((v in domains for v in values), bool, len(rows))
