"""deviceshare: GPUs shared by memory and taken as whole cards, per card, as Volcano's gpushare.

A pod asking `volcano.sh/gpu-memory` (with `deviceshare.GPUSharingEnable`) needs one card
with that much free memory; a pod asking `volcano.sh/gpu-number: N` (with
`deviceshare.GPUNumberEnable`) needs N idle cards on one node and takes them whole. A pod
asking both is a whole-card pod. The cards chosen go into the pod's annotation
`volcano.sh/gpu-index` ("0" or "0,1"), written before the bind; pods already placed are read
back from that annotation when the session opens. Cards listed in the node annotation
`volcano.sh/gpu-unhealthy-ids` or reported failing by the node's agent are never chosen; a
list that names no card of the node (unreadable, or an id beyond its cards) holds all its
cards unhealthy and is reported as a fault on the node, which still takes pods that ask for
no GPU. Cards and MIG slices: see `central.plugins.gpucards`.

By default the card is Volcano gpushare's: the lowest-numbered card with enough free memory
(whole-card pods: the lowest-numbered idle cards), and the plugin does not score nodes
(Volcano applies `deviceshare.SchedulePolicy` only to vGPU). Naming a policy in
`deviceshare.SchedulePolicy` is a Caldera extension for shared cards: it picks the card on a
node and scores the node (x `deviceshare.ScheduleWeight`, default 0: the card choice alone):
- binpack: the fitting card with the least free memory (best fit); a node scores 100 x the
  card's use after placement; whole-card pods go where the most cards are in use.
- spread: the card with the fewest pods, then the most free memory; a node scores 100 x the
  card's free share after placement; whole-card pods go where the most cards stay idle.
- fragmentation-aware (Caldera): a shared pod goes onto a card already partly used whenever
  one fits (best fit; such nodes score 50..100), and opens an idle card only where that
  costs whole-card jobs least (0..50): where it does not shrink the largest power-of-two set
  of idle cards the node still offers, then where fewest idle cards remain. Whole-card pods
  best-fit the idle-card count, as binpack. Idle whole cards stay together for 2-, 4- and
  8-card jobs instead of being nibbled by shared pods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import Arguments, Plugin
from central.framework.status import Check, Code
from central.model.fields import parse_index_list
from central.model.objects import NodeInfo, TaskInfo, TaskStatus
from central.plugins.gpucards import (
    GPU_MEMORY,
    GPU_NUMBER,
    UNHEALTHY,
    GpuCards,
)
from central.resources.vectors import EPSILON

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

GPU_INDEX = "volcano.sh/gpu-index"
FIRST_FIT = ""  # Volcano gpushare's choice, the default
POLICIES = (FIRST_FIT, "binpack", "spread", "fragmentation-aware")
ARGUMENTS = ("GPUSharingEnable", "GPUNumberEnable", "SchedulePolicy", "ScheduleWeight")
UNSUPPORTED = ("VGPUEnable", "NodeLockEnable", "AscendMindClusterVNPUEnable", "AscendHAMiVNPUEnable")
MAX_SCORE = 100.0
_NONE = np.inf


def _largest_power_of_two(count: np.ndarray) -> np.ndarray:
    """Per node, the biggest 2^k <= idle cards (0 for none): the largest aligned job it fits."""
    safe = np.maximum(count, 1)
    return np.where(count > 0, 2 ** np.floor(np.log2(safe)), 0)


class DeviceShare(Plugin, ext.Predicate, ext.NodeOrder, ext.AllocationEvents):
    name = "deviceshare"

    @classmethod
    def read_arguments(cls, args: Arguments) -> tuple[bool, bool, str, float]:
        """(GPUSharingEnable, GPUNumberEnable, SchedulePolicy, ScheduleWeight)"""
        for key in args.raw:
            short = key.removeprefix("deviceshare.")
            if short in UNSUPPORTED:
                if args.get(key, False, bool):
                    raise args.error(key, "not supported by Caldera; leave it false")
            elif short not in ARGUMENTS or short == key:
                raise args.error(key, f"unknown argument; valid: {', '.join(f'deviceshare.{a}' for a in ARGUMENTS)}")
        sharing = args.get("deviceshare.GPUSharingEnable", False, bool)
        whole = args.get("deviceshare.GPUNumberEnable", False, bool)
        policy = args.get("deviceshare.SchedulePolicy", FIRST_FIT, str)
        if policy not in POLICIES:
            raise args.error("deviceshare.SchedulePolicy",
                             f"unknown policy {policy!r}; valid: {', '.join(p for p in POLICIES if p)} "
                             "(or leave it unset for Volcano's lowest-numbered card)")
        weight = args.get("deviceshare.ScheduleWeight", 0, float)
        if weight < 0:
            raise args.error("deviceshare.ScheduleWeight", f"must not be negative, got {weight:g}")
        return sharing, whole, policy, weight

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.sharing, self.whole, self.policy, self.weight = self.settings
        index = handle.dims.index
        self.memory_col, self.number_col = index.get(GPU_MEMORY), index.get(GPU_NUMBER)
        self._requests: dict[int, tuple[np.ndarray, tuple[float, int]]] = {}
        self.charged: dict[str, tuple[int, list[int], list[float]]] = {}  # task uid -> (row, cards, amounts)
        self.cards = GpuCards(handle.nodes)
        for node in handle.nodes:
            if self.cards.has_cards(node.index):
                unhealthy = self._listed_unhealthy(node) | self._reported_unhealthy(node)
                if unhealthy:
                    self.cards.set_unhealthy(node.index, sorted(unhealthy))
                for task in node.tasks.values():
                    self._charge_placed(task)

    def _listed_unhealthy(self, node: NodeInfo) -> set[int]:
        """The cards named by the node's annotation. A list that does not read makes every card
        of the node unhealthy, and is reported: GPU pods go elsewhere, the rest still fit here."""
        text = node.annotations.get(UNHEALTHY)
        if text is None:
            return set()
        cards = self.cards.count(node.index)
        where = f"Node {node.name}: metadata.annotations[{UNHEALTHY}]"
        try:
            return set(parse_index_list(text, where, cards))
        except InputError as err:
            self.handle.fault_node(node, InputError(where, f"{err.message}; all {cards} GPUs held unhealthy"),
                                    self.name, exclude=False)
            return set(range(cards))

    def _reported_unhealthy(self, node: NodeInfo) -> set[int]:
        """The failing cards of a fresh agent report; a card id the node does not have is held
        as the annotation's bad list is (all cards unhealthy, reported)."""
        report = self.handle.agents.data[node.index]
        if report is None:
            return set()
        cards = self.cards.count(node.index)
        failing = {gpu.index for gpu in report.gpus if not gpu.healthy}
        stray = sorted(i for i in failing if not 0 <= i < cards)
        if not stray:
            return failing
        self.handle.fault_node(node, InputError(
            f"Node {node.name}: agent report gpus[].index",
            f"unhealthy GPU {stray[0]} is beyond the node's {cards} GPUs (0-{cards - 1}); all {cards} GPUs held "
            "unhealthy"), self.name, exclude=False)
        return set(range(cards))

    # --- requests -------------------------------------------------------------------------

    def _request(self, task: TaskInfo) -> tuple[float, int]:
        """(memory on one card, whole cards) the pod asks of this plugin; (0, 0) for none."""
        found = self._requests.get(id(task.resreq))  # request vectors are shared per template
        if found is None or found[0] is not task.resreq:
            req = task.resreq
            memory = float(req[self.memory_col]) if self.sharing and self.memory_col is not None else 0.0
            number = round(req[self.number_col] / 1000) if self.whole and self.number_col is not None else 0
            asked = (0.0, number) if number > 0 else (memory if memory > EPSILON else 0.0, 0)
            found = self._requests[id(req)] = (req, asked)
        return found[1]

    # --- placement ------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        """Cards held by pods are unschedulable (evicting them frees the cards, as Volcano's
        gpushare says); too few healthy cards, or none large enough, is unresolvable."""
        cards = self.cards
        memory, number = self._request(task)
        if number:
            never = cards.cards[rows] < number
            return [Check(cards.fits_whole(rows, number), f"node(s) didn't have {number} idle healthy GPU card(s)",
                          np.where(never, Code.UNRESOLVABLE, Code.UNSCHEDULABLE).astype(np.int8))]
        if memory:
            never = ~np.any(cards.healthy[rows] & (cards.cap[rows] + EPSILON >= memory), axis=1)
            return [Check(cards.fits_memory(rows, memory), "node(s) didn't have a healthy GPU card with enough free memory",
                          np.where(never, Code.UNRESOLVABLE, Code.UNSCHEDULABLE).astype(np.int8))]
        return []

    def batchable(self, task: TaskInfo) -> bool:
        return self._request(task) == (0.0, 0)  # asks no card: no filter, no score

    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        memory, number = self._request(task)
        if not self.weight or not (memory or number) or self.policy == FIRST_FIT:
            return np.zeros(len(rows))
        score = self._whole_score(rows, number) if number else self._shared_choice(rows, memory)[1]
        return score * self.weight

    def _shared_choice(self, rows: np.ndarray, memory: float) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the card the policy picks for `memory` and the row's score (0 if none fits)."""
        cards = self.cards
        free, holders, cap = cards.free(rows), cards.holders[rows], cards.cap[rows]
        fits = free + EPSILON >= memory
        if self.policy == FIRST_FIT:
            key = np.where(fits, np.arange(cap.shape[1]), _NONE)
        elif self.policy == "binpack":
            key = np.where(fits, free, _NONE)
        elif self.policy == "spread":
            key = np.where(fits, holders * 1e15 - free, _NONE)
        else:
            partly = fits & (holders > 0)
            key = np.where(partly, free, np.where(fits, 1e15 + np.arange(cap.shape[1]), _NONE))
        choice = np.argmin(key, axis=1)
        at = np.arange(len(rows))
        card_free, card_cap = free[at, choice], np.maximum(cap[at, choice], EPSILON)
        if self.policy == FIRST_FIT:
            score = np.zeros(len(rows))
        elif self.policy == "binpack":
            score = MAX_SCORE * (card_cap - card_free + memory) / card_cap
        elif self.policy == "spread":
            score = MAX_SCORE * (card_free - memory) / card_cap
        else:
            used_card = holders[at, choice] > 0
            total = np.maximum(cards.cards[rows], 1)
            idle = cards.idle[rows]
            lost = _largest_power_of_two(idle) - _largest_power_of_two(idle - 1)
            opening = 25 * (1 - lost / total) + 25 * (1 - (idle - 1) / total)
            score = np.where(used_card, 50 + 50 * (card_cap - card_free + memory) / card_cap, opening)
        return choice, np.where(fits.any(axis=1), score, 0.0)

    def _whole_score(self, rows: np.ndarray, number: int) -> np.ndarray:
        idle, total = self.cards.idle[rows], self.cards.cards[rows]
        share = (idle - number) / np.maximum(total, 1)
        score = MAX_SCORE * (share if self.policy == "spread" else 1 - share)
        return np.where((idle >= number) & (total > 0), score, 0.0)

    # --- events ---------------------------------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        if task.status not in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
            self._charge_placed(task)  # an eviction undone: back onto its cards
            return
        memory, number = self._request(task)
        if not (memory or number) or task.node is None:
            return
        row = self.handle.nodes_by_name[task.node].index
        if number:
            chosen = self.cards.idle_cards(row, number)
            if len(chosen) < number:
                return
            amounts = self.cards.whole_amounts(row, chosen)
        else:
            choice, _ = self._shared_choice(np.array([row]), memory)
            if self.cards.free(row)[choice[0]] + EPSILON < memory:
                return
            chosen, amounts = [int(choice[0])], [memory]
        self._charge(task, row, chosen, amounts)
        self.handle.annotate(task, GPU_INDEX, ",".join(map(str, chosen)))

    def on_deallocate(self, task: TaskInfo) -> None:
        charged = self.charged.pop(task.uid, None)
        if charged is not None:
            self.cards.charge(*charged, sign=-1)
            if task.status == TaskStatus.PENDING:
                self.handle.annotate(task, GPU_INDEX, None)

    def _charge_placed(self, task: TaskInfo) -> None:
        """A pod already on its cards (annotation `volcano.sh/gpu-index`) takes them again."""
        memory, number = self._request(task)
        index = task.annotations.get(GPU_INDEX) or self.handle.annotation(task, GPU_INDEX)
        if not (memory or number) or not index or task.node is None or task.uid in self.charged:
            return
        row = self.handle.nodes_by_name[task.node].index
        where = f"Pod {task.uid}: metadata.annotations[{GPU_INDEX}]"
        try:
            chosen = parse_index_list(index, where, self.cards.count(row))
        except InputError as err:  # a placed pod: reported; which cards it holds is unknown
            self.handle.fault_task(task, err, self.name)
            return
        if chosen:
            amounts = self.cards.whole_amounts(row, chosen) if number else [memory] * len(chosen)
            self._charge(task, row, chosen, amounts)

    def _charge(self, task: TaskInfo, row: int, cards: list[int], amounts: list[float]) -> None:
        self.cards.charge(row, cards, amounts, sign=1)
        self.charged[task.uid] = (row, cards, amounts)
