"""Checks a set of Queues as a tree before anything is scheduled against them.

The rules of Volcano's queue webhook that concern the tree and the quotas: a parent must
exist, there are no cycles, guarantee <= deserved <= capability, and a child's capability
never exceeds its parent's (dimension by dimension).
"""

from __future__ import annotations

from central.errors import InputError
from central.model.objects import QueueInfo
from central.resources.vectors import EPSILON, format_value


def check_queues(queues: dict[str, QueueInfo], sources: dict[str, str] | None = None) -> None:
    """InputError for the first queue that breaks a rule, prefixed with its file if known."""
    for name, queue in sorted(queues.items()):
        where = f"Queue {name}"
        if sources and name in sources:
            where = f"{sources[name]}: {where}"
        _within(queue.guarantee, queue.capability, f"{where}: spec.guarantee.resource", "spec.capability")
        _within(queue.deserved, queue.capability, f"{where}: spec.deserved", "spec.capability")
        _within(queue.guarantee, queue.deserved, f"{where}: spec.guarantee.resource", "spec.deserved")
        if queue.parent and queue.parent != name and queue.parent not in queues and queue.parent != "root":
            raise InputError(f"{where}: spec.parent", f"parent queue {queue.parent!r} does not exist")
        parent = queues.get(queue.parent or "")
        if parent is not None:
            _within(queue.capability, parent.capability, f"{where}: spec.capability", f"parent queue {parent.name}'s spec.capability")
        path = [name]  # in walking order: a set would print the queues in hash order
        current: QueueInfo | None = queue
        while current is not None and current.parent and current.parent != "root":
            if current.parent in path:
                raise InputError(f"{where}: spec.parent", f"queue tree has a cycle: {' -> '.join([*path, current.parent])}")
            path.append(current.parent)
            current = queues.get(current.parent)


def _within(small: dict[str, float], big: dict[str, float], where: str, bound: str) -> None:
    """small <= big on every dimension big names (an unset bound is unlimited)."""
    for name, value in small.items():
        if name in big and value > big[name] + EPSILON:
            raise InputError(f"{where}.{name}", f"{format_value(name, value)} exceeds {bound}.{name} ({format_value(name, big[name])})")
