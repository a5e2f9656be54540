"""Priority queues ordered by the session's ordering points, like Volcano's PriorityQueue.

Items are compared when pushed and popped, with the plugins' current view (a DRF share moves
as jobs get resources), exactly as a heap over a `less` function behaves.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry:
    __slots__ = ("item", "less")

    def __init__(self, item: Any, less: Callable[[Any, Any], bool]):
        self.item = item
        self.less = less

    def __lt__(self, other: "_Entry") -> bool:
        return self.less(self.item, other.item)


class PriorityQueue(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()):
        self._less = less
        self._heap = [_Entry(i, less) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, self._less))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
