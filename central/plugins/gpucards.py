"""Per-card GPU state for the deviceshare plugin, one row per node, one column per card.

Cards of a node come from its allocatable `volcano.sh/gpu-number` (N cards) and
`volcano.sh/gpu-memory` (the total, split evenly: memory per card = total / N), as Volcano's
gpushare reads them. A node annotated `caldera.sh/gpu-mig-slices` (MIG profiles in device
order, e.g. "3g.40gb,2g.20gb,1g.10gb,1g.10gb") is instead seen as one card per MIG slice,
each with the memory its profile names (GiB, counted in MiB like `volcano.sh/gpu-memory`):
a slice is shared by memory or taken whole exactly like a card.

Memory is kept in the scheduler's canonical units (a scalar resource counts milli-units),
so requests from `TaskInfo.resreq` compare directly. A card is *idle* when nothing holds it;
a whole-card pod charges the card's full memory, so no shared pod fits beside it. Two
per-node summaries, the largest free memory of a healthy card and the number of idle healthy
cards, make the placement filter a vector comparison; every write refreshes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from central.model.objects import NodeInfo
from central.resources.vectors import EPSILON

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
UNHEALTHY = "volcano.sh/gpu-unhealthy-ids"
MIG_SLICES = "caldera.sh/gpu-mig-slices"
MIB = 1000.0  # one MiB of volcano.sh/gpu-memory in canonical milli-units
_PROFILE = re.compile(r"^\s*\d+g\.(\d+)gb\s*$")


def card_memory(node: NodeInfo) -> list[float]:
    """Memory of each card (or MIG slice) of the node, canonical units; [] without GPUs."""
    slices = node.annotations.get(MIG_SLICES, "").strip()
    if slices:
        sizes = [_PROFILE.match(s) for s in slices.split(",")]
        if all(sizes):
            return [int(m.group(1)) * 1024 * MIB for m in sizes if m]
        return []  # a malformed description is no GPU at all rather than a guess
    number = int(node.allocatable.get(GPU_NUMBER, 0) // 1000)
    total = node.allocatable.get(GPU_MEMORY, 0.0)
    return [total / number] * number if number > 0 else []


class GpuCards:
    def __init__(self, nodes: Sequence[NodeInfo]):
        memory = [card_memory(node) for node in nodes]
        n, width = len(nodes), max((len(m) for m in memory), default=0) or 1
        self.cap = np.zeros((n, width))
        self.used = np.zeros((n, width))
        self.holders = np.zeros((n, width), dtype=np.int64)
        self.healthy = np.zeros((n, width), dtype=bool)
        for row, sizes in enumerate(memory):
            self.cap[row, : len(sizes)] = sizes
            self.healthy[row, : len(sizes)] = True
        self.largest_free = np.zeros(n)
        self.idle = np.zeros(n, dtype=np.int64)
        self.cards = self.healthy.sum(axis=1)
        for filled in np.flatnonzero(self.cards).tolist():
            self.refresh(filled)

    def has_cards(self, row: int) -> bool:
        return bool(self.cap[row].any())

    def count(self, row: int) -> int:
        """How many cards (or MIG slices) the node has: card ids run below this."""
        return int((self.cap[row] > 0).sum())

    def set_unhealthy(self, row: int, card_ids: Iterable[int]) -> None:
        """Take these cards out of placement (the pods on them stay charged)."""
        width = self.cap.shape[1]
        self.healthy[row] = self.cap[row] > 0
        for card in card_ids:
            if 0 <= card < width:
                self.healthy[row, card] = False
        self.cards[row] = self.healthy[row].sum()
        self.refresh(row)

    def free(self, rows: np.ndarray | int) -> np.ndarray:
        """Free memory per card; unhealthy and absent cards have none (-1, below any request)."""
        return np.where(self.healthy[rows], self.cap[rows] - self.used[rows], -1.0)

    def charge(self, row: int, cards: Sequence[int], amounts: Sequence[float], sign: int) -> None:
        for card, amount in zip(cards, amounts):
            self.used[row, card] += sign * amount
            self.holders[row, card] += sign
        self.refresh(row)

    def whole_amounts(self, row: int, cards: Sequence[int]) -> list[float]:
        return [float(self.cap[row, card]) for card in cards]

    def idle_cards(self, row: int, count: int) -> list[int]:
        """The first `count` idle healthy cards of the node, by id."""
        idle = np.flatnonzero(self.healthy[row] & (self.holders[row] == 0))
        return [int(c) for c in idle[:count]]

    def refresh(self, row: int) -> None:
        free = self.free(row)
        self.largest_free[row] = max(float(free.max()), 0.0)
        self.idle[row] = int((self.healthy[row] & (self.holders[row] == 0)).sum())

    def fits_memory(self, rows: np.ndarray, memory: float) -> np.ndarray:
        return self.largest_free[rows] + EPSILON >= memory

    def fits_whole(self, rows: np.ndarray, count: int) -> np.ndarray:
        return self.idle[rows] >= count
