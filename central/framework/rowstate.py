"""The node table's figures on the rows one placement question reads, gathered once.

The placement's resource checks and the plugins' array forms (`node_order_on`,
`row_predicate_on`: see `central.framework.plugin`) all read the same few table arrays on the
same rows; a `RowState` takes each array's rows once and hands the same copy to every reader,
where each reader used to take its own. It can also stand for rows as they would be, not as
they are: `overrides` gives some arrays' figures outright (a plan's rows with j more pods on
each, several j at once), everything else is read from the table, so one call over many
such states costs about what one call over the table does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from central.model.nodetable import NodeTable


class RowState:
    """Table arrays (`central.model.nodetable.NodeTable`'s names: used, idle, future, alloc,
    releasing, pipelined, pods, releasing_pods, max_pods) on `rows`, row i of every answer
    standing for node row `rows[i]` (a row may appear more than once: in several states).
    What it returns is shared between readers: they must not write into it (marking the
    arrays read-only would cost more than the sharing saves)."""

    __slots__ = ("rows", "_table", "_full", "_blocks")

    def __init__(self, table: NodeTable, rows: np.ndarray, overrides: Mapping[str, np.ndarray] | None = None):
        self.rows = rows
        self._table = table
        self._full: dict[str, np.ndarray] = dict(overrides) if overrides else {}
        self._blocks: dict[tuple[str, int], tuple[object, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def full(self, name: str) -> np.ndarray:
        """The table array `name` on the rows: (rows, dims), or (rows,) for the pod counts."""
        found = self._full.get(name)
        if found is None:
            found = self._full[name] = getattr(self._table, name).take(self.rows, axis=0)
        return found

    def block(self, name: str, cols: np.ndarray) -> np.ndarray:
        """`full(name)[:, cols]` (`central.model.nodetable.block`'s figures), kept per `cols`
        object: readers pass the column arrays they keep per request."""
        key = (name, id(cols))
        found = self._blocks.get(key)
        if found is None or found[0] is not cols:  # the object is held, so its id is not reused
            found = self._blocks[key] = (cols, self.full(name).take(cols, axis=1))
        return found[1]
