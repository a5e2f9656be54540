"""The action registry: configuration names to functions run on a session, in order."""

from collections.abc import Callable

from central.actions.allocate import allocate
from central.actions.backfill import backfill
from central.actions.enqueue import enqueue
from central.actions.preempt import preempt
from central.actions.reclaim import reclaim
from central.actions.shuffle import shuffle
from central.framework.session import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "backfill": backfill,
    "preempt": preempt,
    "reclaim": reclaim,
    "shuffle": shuffle,
}
