"""pdb: PodDisruptionBudgets filter preempt's and reclaim's victims.

Each call starts from every PDB's `status.disruptionsAllowed` and walks the candidates in
the order given (least important first): a candidate uses one disruption of every PDB of its
namespace whose selector matches its labels, and stays a victim only while none of those
goes below zero. A pod the PDB already lists in `status.disruptedPods` (an eviction the API
server granted) uses none. A PDB with no selector, or an empty one, matches no pod.

Where Caldera differs from Volcano, and why:
- Evictions made earlier in the session use the budgets too. Volcano starts every call from
  the status, so two preemptors in one session can each take a pod of a budget of one; the
  API server then refuses the second eviction (429) after its preemptor was pipelined.
- The filter holds whatever later tiers decide (it is also a victim guard, as gang is): in
  Volcano a tier whose answer is empty hands the choice to the next tier, so when no
  candidate is within its budgets a later tier's plugin (proportion in reclaim, say) evicts
  them anyway.
- A pod without labels matches no PDB, so it stays a victim; Volcano drops it from the
  victims (its loop skips such pods before adding them), which makes unlabelled pods
  impossible to preempt once this plugin is on.
- The plugin names no victims to `shuffle`: Volcano registers the same filter as a victim
  source, so shuffle with pdb on would evict every labelled Running pod its PDBs allow.
  The API server still holds shuffle's evictions to the budgets (an eviction over budget is
  refused with 429).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from central.framework import extension as ext
from central.framework.plugin import Plugin
from central.model.objects import TaskInfo, TaskStatus

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption
    from central.model.policy import PdbInfo


class Pdb(Plugin, ext.Preemptable, ext.Reclaimable, ext.VictimGuard, ext.AllocationEvents):
    name = "pdb"

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.evicted: dict[str, TaskInfo] = {}  # evicted in this session (an undone eviction leaves)

    def on_allocate(self, task: TaskInfo) -> None:
        self.evicted.pop(task.uid, None)  # an eviction undone

    def on_deallocate(self, task: TaskInfo) -> None:
        if task.status == TaskStatus.RELEASING:
            self.evicted[task.uid] = task

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._within_budgets(candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._within_budgets(candidates)

    def guard_victims(self, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
        return self._within_budgets(victims)

    def may_lose(self, preemptor: TaskInfo, victim: TaskInfo) -> bool:
        return bool(self._within_budgets([victim]))

    def _within_budgets(self, candidates: list[TaskInfo]) -> list[TaskInfo]:
        pdbs = [pdb for pdb in self.handle.pdbs.values() if pdb.selector is not None]
        if not pdbs:
            return list(candidates)
        allowed = {f"{pdb.namespace}/{pdb.name}": pdb.disruptions_allowed for pdb in pdbs}
        for task in self.evicted.values():
            _use(pdbs, allowed, task)
        return [task for task in candidates if _use(pdbs, allowed, task)]


def _use(pdbs: list[PdbInfo], allowed: dict[str, int], task: TaskInfo) -> bool:
    """Take one disruption of every PDB that selects the task; False if one goes below zero."""
    labels = task.template.label_map
    within = True
    if not labels:
        return within
    for pdb in pdbs:
        if pdb.namespace != task.namespace or pdb.selector is None or task.name in pdb.disrupted_pods:
            continue
        if pdb.selector.matches(labels):
            key = f"{pdb.namespace}/{pdb.name}"
            allowed[key] -= 1
            within = within and allowed[key] >= 0
    return within
