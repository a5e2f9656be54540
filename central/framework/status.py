"""Filter results with a status, as kube-scheduler's framework has them.

A filter answers per node row: the node fits, the node is `UNSCHEDULABLE` (something on it
stands in the way, so evicting pods there could make it fit: short resources, a taken pod
slot or GPU card, a port in use, an anti-affinity peer), or it is `UNRESOLVABLE` (nothing done
on the node helps: its labels, taints, NUMA policy, a request above what it could ever
offer). Allocate takes only nodes that fit; preempt and reclaim consider every node that is
not unresolvable, and drop the others before choosing victims (Volcano's
UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np


class Code(IntEnum):
    FITS = 0
    UNSCHEDULABLE = 1
    UNRESOLVABLE = 2


class Check(NamedTuple):
    """One filter's answer over some rows: `ok` mask, the reason shown for the rows that
    fail, and how they fail: one Code for all, or an int8 array of Codes per row."""

    ok: np.ndarray
    reason: str
    code: Code | np.ndarray = Code.UNRESOLVABLE

    def failing(self) -> np.ndarray:
        """Per row: FITS where ok, else the check's code."""
        code = self.code if isinstance(self.code, np.ndarray) else np.int8(self.code)
        return np.where(self.ok, np.int8(Code.FITS), code).astype(np.int8, copy=False)


def fold(codes: np.ndarray, checks: list[Check]) -> np.ndarray:
    """The worst code per row over `codes` and every check (rows failing twice keep the worse)."""
    for check in checks:
        np.maximum(codes, check.failing(), out=codes)
    return codes


def sliced(check: Check, rows: np.ndarray) -> Check:
    """A check over all rows, narrowed to `rows`."""
    code = check.code[rows] if isinstance(check.code, np.ndarray) else check.code
    return Check(check.ok[rows], check.reason, code)


class Status(NamedTuple):
    """A gate's answer for one task (Allocatable, Preemptive): `ok` lets it through; otherwise
    `reason` says why not, with numbers, for the task's why-pending text ("" if the gate
    gives none). A refusal is UNSCHEDULABLE: what stands in the way is the queue's
    allocation, which evicting could change."""

    code: Code
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.code == Code.FITS


ALLOWED = Status(Code.FITS)  # one shared instance: gates answer it on the hot path


def refused(reason: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE, reason)
