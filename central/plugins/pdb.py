"""pdb: PodDisruptionBudgets filter preempt's and reclaim's victims.

Each call starts from every PDB's `status.disruptionsAllowed` and walks the candidates in
the order given (least important first): a candidate uses one disruption of every PDB of its
namespace whose selector matches its labels, and stays a victim only while none of those
goes below zero. A pod the PDB already lists in `status.disruptedPods` (an eviction the API
server granted) uses none. A PDB with no selector, or an empty one, matches no pod.

Where Caldera differs from Volcano, and why:
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

from central.framework import extension as ext
from central.framework.plugin import Plugin
from central.model.objects import TaskInfo


class Pdb(Plugin, ext.Preemptable, ext.Reclaimable, ext.VictimGuard):
    name = "pdb"

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
        victims = []
        for task in candidates:
            labels = task.template.label_map
            violated = False
            for pdb in pdbs:
                if pdb.namespace != task.namespace or not labels or pdb.selector is None:
                    continue
                if not pdb.selector.matches(labels) or task.name in pdb.disrupted_pods:
                    continue
                key = f"{pdb.namespace}/{pdb.name}"
                allowed[key] -= 1
                if allowed[key] < 0:
                    violated = True
            if not violated:
                victims.append(task)
        return victims
