"""Hierarchical DRF (drf with `enableHierarchy`), Volcano's HDRF over queue paths.

A queue names its place in the tree with annotation `volcano.sh/hierarchy` ("root/eng/ml")
and each level's weight with `volcano.sh/hierarchy-weights` ("1/2/3"; a missing or sub-1
weight counts as 1). Jobs are the leaves under their queue's path. From the leaves up:
- a job's share is its dominant share of the cluster; it is saturated when it holds all it
  asks on a resource it uses, or asks for a resource nobody can get more of (fully allocated);
- a parent's allocation is the sum of its non-empty children's, each unsaturated child scaled
  to the smallest unsaturated child share (saturated children count as they are); its share
  is the dominant share of that sum; it is saturated when every child is.
Queues compare level by level along their paths: an unsaturated node before a saturated one,
then the lower share / weight; equal nodes descend one level. The tree is recomputed when a
comparison needs it after allocations changed (Volcano recomputes it on every event).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from central.resources.vectors import dominant_share

Key = tuple[str, ...]  # an inner node's path below root; () is root


class HdrfTree:
    def __init__(self, total: np.ndarray, jobs: list[tuple[str, str, str, np.ndarray]]):
        """`jobs`: (job uid, queue hierarchy, queue hierarchy weights, job total request)."""
        self.total = total
        self.children: dict[Key, list[Key | str]] = {(): []}
        self.weight: dict[Key, float] = {(): 1.0}
        self.request: dict[str, np.ndarray] = {}
        for uid, hierarchy, weights, request in jobs:
            key: Key = ()
            parts, ws = hierarchy.split("/"), weights.split("/")
            for i in range(1, len(parts)):
                child = key + (parts[i],)
                if child not in self.children:
                    self.children[child] = []
                    self.weight[child] = max(_number(ws[i] if i < len(ws) else ""), 1.0)
                    self.children[key].append(child)
                key = child
            self.children[key].append(uid)
            self.request[uid] = request

    def evaluate(self, allocated: Mapping[str, np.ndarray]) -> dict[Key | str, tuple[float, bool]]:
        """(share, saturated) of every node, for the jobs' `allocated` resources."""
        total_allocated = np.sum([allocated[uid] for uid in self.request], axis=0) if self.request else self.total * 0
        demanding = total_allocated < self.total
        out: dict[Key | str, tuple[float, bool]] = {}

        def visit(node: Key | str) -> tuple[np.ndarray, float, bool]:
            if isinstance(node, str):
                alloc, request = allocated[node], self.request[node]
                saturated = np.any((alloc != 0) & (request != 0) & (alloc >= request)) or np.any(~demanding & (request != 0))
                result = (alloc, dominant_share(alloc, self.total), bool(saturated))
            else:
                kids = [visit(child) for child in self.children[node]]
                smallest = min([1.0] + [share for _, share, full in kids if share != 0 and not full])
                alloc = self.total * 0
                for vec, share, full in kids:
                    if share != 0:
                        alloc = alloc + (vec if full else vec * (smallest / share))
                result = (alloc, dominant_share(alloc, self.total), all(full for _, _, full in kids))
            out[node] = result[1:]
            return result

        visit(())
        return out

    def compare(self, state: Mapping[Key | str, tuple[float, bool]], left: str, right: str) -> float:
        """< 0 when the queue at hierarchy `left` goes before the one at `right`."""
        lparts, rparts = left.split("/"), right.split("/")
        lkey: Key = ()
        rkey: Key = ()
        depth = min(len(lparts), len(rparts))
        for i in range(depth):
            if lkey not in state or rkey not in state:
                return 0.0  # a queue without jobs has no node to compare
            (lshare, lfull), (rshare, rfull) = state[lkey], state[rkey]
            if lfull != rfull:
                return 1.0 if lfull else -1.0
            lvalue, rvalue = lshare / self.weight[lkey], rshare / self.weight[rkey]
            if lvalue != rvalue:
                return lvalue - rvalue
            if i < depth - 1:
                lkey, rkey = lkey + (lparts[i + 1],), rkey + (rparts[i + 1],)
        return 0.0


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 1.0
