"""Queue quota over ResourceClaims, in Volcano's form: a queue's `capability` (and `deserved`,
`guarantee`) may name `deviceclass/<DeviceClass>`: that many devices of the class.

A pod's claims ask for devices by class: each `exactly` request counts its `count` devices of
its class. As in Volcano, `allocationMode: All` requests (how many depends on the node) are not
counted, nor are `firstAvailable` ones; admin-access requests take no device, so they count
nothing either. A claim shared by several pods of a queue counts once: the ledger keeps, per
queue, how many of its placed pods use each claim, and a pod adds only the claims the queue
does not hold yet.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from central.model.dra import ResourceClaim
from central.model.drastore import DraStore, MissingClaim
from central.model.objects import ALLOCATED_STATUSES, JobInfo, QueueInfo, TaskInfo

DEVICE_CLASS_PREFIX = "deviceclass/"


def device_class_quota(resources: Mapping[str, float]) -> dict[str, float]:
    """DeviceClass -> device count named by `deviceclass/<class>` keys of a queue's resource list
    (read in canonical units: thousandths, as every resource other than memory)."""
    return {name[len(DEVICE_CLASS_PREFIX):]: value / 1000 for name, value in resources.items()
            if name.startswith(DEVICE_CLASS_PREFIX) and len(name) > len(DEVICE_CLASS_PREFIX)}


def claim_devices(claim: ResourceClaim) -> Counter[str]:
    """DeviceClass -> devices the claim asks for, as queue quota counts them."""
    out: Counter[str] = Counter()
    for request in claim.requests:
        if request.device_class and not request.all and not request.admin_access:
            out[request.device_class] += request.count
    return out


class ClaimLedger:
    """Per queue: the claims its placed pods use (each once, however many pods share it) and
    their devices by class."""

    def __init__(self, store: DraStore) -> None:
        self.store = store
        self.pods: dict[str, Counter[str]] = {}  # queue -> claim key -> placed pods using it
        self.used: dict[str, Counter[str]] = {}  # queue -> class -> devices
        self.pending: dict[str, Counter[str]] = {}  # queue -> devices of admitted jobs not placed yet
        self._demand: dict[str, dict[str, Counter[str]]] = {}  # task uid -> claim key -> devices

    def demand(self, task: TaskInfo) -> dict[str, Counter[str]]:
        """Claim key -> devices by class, for the pod's claims that exist (a claim still to be
        made from its template counts nothing yet)."""
        if not task.device_claims:
            return {}
        known = self._demand.get(task.uid)
        if known is None:
            known = {}
            for ref in task.device_claims:
                try:
                    claims = self.store.task_claims(task.namespace, task.name, (ref,))
                except MissingClaim:
                    continue
                known[claims[0].key] = claim_devices(claims[0])
            self._demand[task.uid] = known
        return known

    def extra(self, queue: str, tasks: Iterable[TaskInfo]) -> Counter[str]:
        """Devices by class that placing `tasks` would add to the queue: claims it does not
        hold yet, each once."""
        held = self.pods.get(queue, Counter())
        seen: set[str] = set()
        out: Counter[str] = Counter()
        for task in tasks:
            for key, devices in self.demand(task).items():
                if held[key] <= 0 and key not in seen:
                    seen.add(key)
                    out.update(devices)
        return out

    def charge(self, queue: str, task: TaskInfo, sign: int) -> None:
        pods = self.pods.setdefault(queue, Counter())
        used = self.used.setdefault(queue, Counter())
        for key, devices in self.demand(task).items():
            before = pods[key]
            pods[key] = max(before + sign, 0)
            if before == 0 and sign > 0:
                used.update(devices)
            elif before == 1 and sign < 0:
                used.subtract(devices)

    def in_use(self, queue: str) -> Counter[str]:
        return self.used.get(queue, Counter())


def over_device_quota(queue: str, used: Counter[str], extra: Counter[str], limits: Mapping[str, float],
                      what: str = "capability") -> str | None:
    """Why `extra` more devices do not fit the queue's `deviceclass/` limits, with the numbers;
    None when they fit. A class the queue names no limit for is unlimited."""
    short = [f"{DEVICE_CLASS_PREFIX}{cls}: {used[cls]:g} in use + {extra[cls]:g} requested > {limits[cls]:g} {what}"
             for cls in sorted(extra) if extra[cls] > 0 and cls in limits and used[cls] + extra[cls] > limits[cls]]
    return f"queue {queue}: " + "; ".join(short) if short else None


def min_claim_tasks(job: JobInfo) -> list[TaskInfo]:
    """The pods whose claims a job needs to start: its first minAvailable pods with claims
    (by namespace, name), as Volcano's GetMinDRAResources counts them."""
    with_claims = sorted((t for t in job.tasks.values() if t.device_claims), key=lambda t: (t.namespace, t.name))
    return with_claims[:max(job.min_available, 0)]


class DeviceQuota:
    """The `deviceclass/` capabilities of a session's queues and what their pods' claims hold.

    `lineage(queue)` names the queues a pod of `queue` counts in: the queue itself and, in a
    tree, its ancestors. A job admitted (or Inqueue at session open) holds its claims' devices
    for the admission check until the session ends, as its minResources does."""

    def __init__(self, store: DraStore, limits: dict[str, dict[str, float]],
                 lineage: Callable[[str], list[str]]) -> None:
        self.limits = limits
        self.lineage = lineage
        self.ledger = ClaimLedger(store)

    @classmethod
    def of(cls, store: DraStore, queues: Iterable[QueueInfo],
           lineage: Callable[[str], list[str]]) -> DeviceQuota | None:
        """None where no queue's capability names a DeviceClass (nothing to count)."""
        limits = {queue.name: quota for queue in queues if (quota := device_class_quota(queue.capability))}
        return cls(store, limits, lineage) if limits else None

    def account(self, job: JobInfo) -> None:
        """At session open: the job's placed pods' claims, and an Inqueue job's admitted ones."""
        for task in job.tasks.values():
            if task.device_claims and task.status in ALLOCATED_STATUSES:
                self.charge(job.queue, task, +1)
        if job.phase == "Inqueue":
            self.admit(job)

    def charge(self, queue: str, task: TaskInfo, sign: int) -> None:
        if task.device_claims:
            for name in self.lineage(queue):
                self.ledger.charge(name, task, sign)

    def admit(self, job: JobInfo) -> None:
        tasks = min_claim_tasks(job)
        for name in self.lineage(job.queue):
            if name in self.limits:
                self.ledger.pending.setdefault(name, Counter()).update(self.ledger.extra(name, tasks))

    def refusal(self, queue: str, tasks: list[TaskInfo], with_admitted: bool) -> str | None:
        """Why the tasks' claims would take the queue (or an ancestor) past its `deviceclass/`
        capability, with the numbers; None when they fit."""
        if not any(task.device_claims for task in tasks):
            return None
        for name in self.lineage(queue):
            limits = self.limits.get(name)
            if limits:
                used = self.ledger.in_use(name)
                if with_admitted:
                    used = used + self.ledger.pending.get(name, Counter())
                why = over_device_quota(name, used, self.ledger.extra(name, tasks), limits)
                if why is not None:
                    return why
        return None
