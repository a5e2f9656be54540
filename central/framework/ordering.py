"""Priority queues ordered by the session's ordering points, like Volcano's PriorityQueue.

Items are compared when pushed and popped, with the plugins' current view (a DRF share moves
as jobs get resources). Because that view changes between operations, the order items come
out in depends on which comparisons the heap makes; this heap makes exactly the ones Go's
container/heap makes (items pushed one by one, `up` on push, swap-and-`down` on pop), so a
queue of jobs or queues comes out in Volcano's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import cmp_to_key
from typing import Generic, TypeVar

T = TypeVar("T")


class PriorityQueue(Generic[T]):
    __slots__ = ("_less", "_items")

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()):
        self._less = less
        self._items: list[T] = []
        for item in items:
            self.push(item)

    def push(self, item: T) -> None:
        items, less = self._items, self._less
        items.append(item)
        j = len(items) - 1
        while j > 0:
            i = (j - 1) // 2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def pop(self) -> T:
        items, less = self._items, self._less
        n = len(items) - 1
        items[0], items[n] = items[n], items[0]
        i = 0
        while True:
            j = 2 * i + 1
            if j >= n:
                break
            if j + 1 < n and less(items[j + 1], items[j]):
                j += 1
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j
        return items.pop()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)


class FixedLine(Generic[T]):
    """Items whose order cannot change while they wait, taken first to last: a job's tasks
    (task orders compare the tasks' own fields, and the last resort is their unique uids, so
    the order is total). Sorted once, in the order `PriorityQueue` pops them for such an
    order, with about one comparison per item when they come nearly sorted (pods by index)
    instead of a heap's two per level per pop."""

    __slots__ = ("_items",)

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()):
        def compare(left: T, right: T) -> int:
            return -1 if less(left, right) else 1  # no two items tie

        key = cmp_to_key(compare)
        self._items = sorted(items, key=key, reverse=True)  # first to come out last in the list

    def pop(self) -> T:
        return self._items.pop()

    def head(self, limit: int) -> list[T]:
        """The next `limit` items (fewer where fewer are left), first first; they stay."""
        items = self._items
        return items[: len(items) - limit - 1 : -1] if limit < len(items) else items[::-1]

    def run_length(self, same: Callable[[T], bool]) -> int:
        """How many of the next items, one after the other from the first, `same` holds for."""
        count = 0
        for item in reversed(self._items):
            if not same(item):
                break
            count += 1
        return count

    def drop(self, count: int) -> None:
        """Take the next `count` items out."""
        del self._items[len(self._items) - count:]

    def assign(self, other: "FixedLine[T]") -> None:
        """Hold exactly what `other` has left, in its order (a trial hands back what it left)."""
        self._items = list(other._items)

    def clear(self) -> None:
        self._items.clear()

    def take_out(self, chosen: Callable[[T], bool]) -> "FixedLine[T]":
        """The items `chosen` picks, as a line of their own in the same order; they leave this one."""
        out: FixedLine[T] = FixedLine.__new__(FixedLine)
        out._items = [item for item in self._items if chosen(item)]
        self._items = [item for item in self._items if not chosen(item)]
        return out

    def copy(self) -> "FixedLine[T]":
        clone: FixedLine[T] = FixedLine.__new__(FixedLine)
        clone._items = list(self._items)
        return clone

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)
