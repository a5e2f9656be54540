"""The action registry: configuration names to action classes, run on a session in order."""

from central.actions.allocate import Allocate
from central.actions.backfill import Backfill
from central.actions.enqueue import Enqueue
from central.actions.gangpreempt import GangPreempt
from central.actions.gangreclaim import GangReclaim
from central.actions.preempt import Preempt
from central.actions.reclaim import Reclaim
from central.actions.shuffle import Shuffle
from central.framework.action import Action

ACTIONS: dict[str, type[Action]] = {cls.name: cls for cls in (Enqueue, Allocate, Backfill, Preempt, Reclaim, Shuffle,
                                                                GangPreempt, GangReclaim)}
