"""Columnar node state: one row per node, one column per resource dimension.

Predicates and scores read these arrays for all nodes at once; statements update single rows.
`idle` = allocatable - used; `future` = idle + releasing - pipelined (Volcano's FutureIdle).
Each write records the changed row in the change log, so per-template caches can re-check
only the rows that moved since they last looked (`mark`, `changed_since`), across sessions.
"""

from __future__ import annotations

import numpy as np


class NodeTable:
    def __init__(self, rows: int, dims: int):
        self.alloc = np.zeros((rows, dims))
        self.used = np.zeros((rows, dims))
        self.releasing = np.zeros((rows, dims))
        self.pipelined = np.zeros((rows, dims))
        self.idle = np.zeros((rows, dims))
        self.future = np.zeros((rows, dims))
        self.pods = np.zeros(rows, dtype=np.int64)  # pods on the node, releasing and pipelined included
        self.releasing_pods = np.zeros(rows, dtype=np.int64)  # of those, releasing: their slots free up
        self.max_pods = np.zeros(rows, dtype=np.int64)
        self.changes: list[int] = []  # rows written since the log was last cleared, in order
        self.cleared = 0  # entries cleared before changes[0]: positions go on counting across clears
        self.last_change = np.zeros(rows, dtype=np.int64)  # per row: 1 + the position of its latest write (0: none)

    @property
    def size(self) -> int:
        return self.alloc.shape[0]

    @property
    def mark(self) -> int:
        """The position of the next write: the rows written from now on are `changed_since(mark)`."""
        return self.cleared + len(self.changes)

    def touch(self, row: int) -> None:
        self.future[row] = self.idle[row] + self.releasing[row] - self.pipelined[row]
        self.changes.append(row)
        self.last_change[row] = self.cleared + len(self.changes)

    def charge(self, row: int, req: np.ndarray, used: float, releasing: float, pipelined: float, pods: int) -> None:
        """Add (or with negative factors, remove) a task's request to a row."""
        if used:
            amount = req if used == 1 else used * req  # the same figures, without a copy
            self.used[row] += amount
            self.idle[row] -= amount
        if releasing:
            self.releasing[row] += releasing * req
            self.releasing_pods[row] += int(releasing)
        if pipelined:
            self.pipelined[row] += pipelined * req
        self.pods[row] += pods
        self.touch(row)

    def charge_rows(self, rows: np.ndarray, req: np.ndarray) -> None:
        """`charge(row, req, 1, 0, 0, 1)` for each of `rows` in turn (a row may repeat): the same
        figures, as np.add.at adds in order, and the same change log."""
        np.add.at(self.used, rows, req)
        np.subtract.at(self.idle, rows, req)
        np.add.at(self.pods, rows, 1)
        self.future[rows] = self.idle[rows] + self.releasing[rows] - self.pipelined[rows]  # a repeated row: one value
        self.changes.extend(rows.tolist())
        self.last_change[rows] = self.cleared + len(self.changes)  # nothing looks at the log between the run's own entries

    def clear_changes(self) -> None:
        """Empty the log (a session's plans index it from its start); positions go on counting."""
        self.cleared += len(self.changes)
        self.changes.clear()

    def changed_since(self, position: int) -> np.ndarray:
        """The rows written at `position` (a `mark`) or after, in row order."""
        return np.flatnonzero(self.last_change > position)


def block(array: np.ndarray, rows: np.ndarray, cols: np.ndarray | list[int]) -> np.ndarray:
    """`array[rows[:, None], cols]`, a new array, by two takes: a fraction of the cost of one
    two-dimensional fancy index on the few rows and columns a placement reads."""
    return array.take(rows, axis=0).take(cols, axis=1)


def row_sum(block: np.ndarray) -> np.ndarray:
    """`block.sum(axis=1)`, the same figures: with two columns one addition, which is what the
    reduction does (numpy's per-row reductions over a few columns cost several times more)."""
    total: np.ndarray = block[:, 0] + block[:, 1] if block.shape[1] == 2 else block.sum(axis=1)
    return total


def column_sums(table: np.ndarray) -> np.ndarray:
    """`table.sum(axis=0)` as a product with ones: numpy's reduction down the many rows of a
    narrow table costs 3-20x more. The same figures for whole numbers (resource amounts are:
    millicores, bytes) whose sums stay below 2**53; otherwise equal up to rounding."""
    total: np.ndarray = np.ones(len(table)) @ table
    return total


def row_any(mask: np.ndarray) -> np.ndarray:
    """`mask.any(axis=1)`, column by column."""
    out = mask[:, 0].copy()
    for j in range(1, mask.shape[1]):
        out |= mask[:, j]
    return out


def row_all(mask: np.ndarray) -> np.ndarray:
    """`mask.all(axis=1)`, column by column."""
    out = mask[:, 0].copy()
    for j in range(1, mask.shape[1]):
        out &= mask[:, j]
    return out
