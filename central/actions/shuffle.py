"""shuffle: evict the Running tasks that plugins want gone now (Volcano's shuffle action).

Every Running task of the session's jobs is offered to the `victim_tasks` plugins (tdm when
a revocable zone's window closes, ...); the union within the first tier that names any is
evicted in one statement, each with the reason its plugin gave. Plugins keep their own
limits (tdm's disruption budgets and evict period), as in Volcano.
"""

from __future__ import annotations

from central.framework.action import Action, ActionHandle
from central.model.objects import TaskStatus

REASON = "Shuffle: evicted by the scheduler ({})"


class Shuffle(Action):
    name = "shuffle"
    acts_on_running = True

    def execute(self, handle: ActionHandle) -> None:
        running = [t for job in handle.jobs.values() for t in job.tasks.values() if t.status == TaskStatus.RUNNING]
        victims = handle.victim_tasks(running)
        if not victims:
            return
        stmt = handle.statement()
        for victim, why in victims:
            if victim.status == TaskStatus.RUNNING:
                stmt.evict(victim, REASON.format(why))
        stmt.commit()
