"""A scheduler replica among several active ones (`--scheduler-sharding-mode=hard`).

Every replica schedules, each on the nodes of its own NodeShard (`shard.volcano.sh`, named
by `--scheduler-sharding-name`); the sharding controller writes the shards. What could race is
settled by the API server, never by a consensus of our own:

- A replica holds its shard's Lease (`<lock name>-<shard>`, labelled
  `caldera.sh/scheduler-shard`) while it
  schedules: two processes of one shard never both decide, and the sharding controller reads
  the Leases to know which schedulers are alive.
- Cluster-wide work (enqueue, queue status, the built-in queues) is done by the one replica
  that holds the scheduler's leader Lease (`ClusterLeader`); the others leave Pending jobs to
  its enqueue.
- A gang (a PodGroup of minMember above one) is placed by one replica at a time: before the
  first bind of a gang a replica claims its PodGroup by an update conditional on the
  resourceVersion (`central.scheduler.shardowner`); a replica that loses the claim drops its
  decision for that gang (`ShardGate`). The claim is released once the API shows the gang
  bound, or when its owner has nothing of it in flight; a dead owner's claim is taken over.
- A pod that two replicas both place (not a gang) is bound once: the API server refuses the
  second bind, and the loser's cache takes the pod as the API has it.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from central.controllers.sharding import LeaseWatch
from central.kube.client import VOLCANO_SCHEDULING, ApiError, KubeClient, path
from central.kube.leader import LeaderElector
from central.model.objects import JobInfo, TaskStatus
from central.scheduler.shardowner import OWNER_ANNOTATION, claim, owner

if TYPE_CHECKING:
    from central.model.cache import ClusterCache
    from central.model.dra import DeviceClaimWrite
    from central.model.volumes import ClaimBinding
    from central.scheduler.feeder import CacheFeeder
    from central.scheduler.kubesink import KubeSink

log = logging.getLogger(__name__)

HARD = "hard"
NONE = "none"
CONFIRMED = (TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED)
IN_FLIGHT = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING)


def shard_lease_name(lock_name: str, shard: str) -> str:
    return f"{lock_name}-{shard}"


class ClusterLeader:
    """Contends for the scheduler's leader Lease in the background, again after each loss;
    `leading()` says whether this replica does the cluster-wide work now. Without an elector
    (leader election off) this replica always does it."""

    def __init__(self, elector: LeaderElector | None):
        self.elector = elector
        self._thread: threading.Thread | None = None

    def leading(self) -> bool:
        return self.elector is None or self.elector.leading.is_set()

    def start(self, stop: threading.Event) -> None:
        if self.elector is None or self._thread is not None:
            return
        elector = self.elector

        def contend() -> None:
            while not stop.is_set():
                if not elector.acquire(stop):
                    return
                while elector.leading.is_set() and not stop.wait(elector.retry_period):
                    pass
        self._thread = threading.Thread(target=contend, name="cluster-leader", daemon=True)
        self._thread.start()

    def release(self) -> None:
        if self.elector is not None:
            self.elector.release()


def needs_claim(job: JobInfo) -> bool:
    """A gang a second replica could split: a real PodGroup of more than one member."""
    return job.has_podgroup and not job.implicit and job.min_available > 1


@dataclass
class Sharding:
    """This replica's place among the shard schedulers, kept across cycles."""

    name: str  # this replica's shard (--scheduler-sharding-name)
    leader: ClusterLeader
    clock: Callable[[], float] = time.monotonic
    leases: dict[str, dict[str, Any]] = field(default_factory=dict)  # the shard Leases' store
    watch: LeaseWatch = field(default_factory=LeaseWatch)
    claimed: set[str] = field(default_factory=set)  # PodGroups this replica claimed and has not released
    share_after: float = 3.0  # seconds another replica's share of pending jobs waits here first
    waiting: dict[str, float] = field(default_factory=dict)  # another's pending job -> first seen here
    shares: list[str] = field(default_factory=list)  # the live replicas this cycle, sorted
    unadmitted: frozenset[str] = frozenset()  # PodGroups waiting for enqueue: the leader's alone
    claims_won: int = 0
    claims_lost: int = 0
    released: int = 0

    def live(self) -> set[str]:
        return self.watch.observe_leases(list(self.leases.values()), self.clock()) | {self.name}

    def job_filter(self, jobs: Iterable[JobInfo]) -> Callable[[JobInfo], bool] | None:
        """The jobs this replica's session takes this cycle (None: every one), given the cache's.

        The others leave Pending PodGroups (phase "" or Pending) to the leader's enqueue; a plain
        pod's implicit group has no object to write, so each replica enqueues it. With several
        live replicas, the admitted jobs nothing of which is placed yet are split between them
        by a hash of the job: each takes its own share at once and another's only once that job
        has waited `share_after` seconds here (its owner could not place it on its nodes), so
        two replicas do not both work out every pending job. Jobs with placed pods stay in
        every session: their pods are the cluster's usage."""
        leading = self.leader.leading()
        live = self.shares = sorted(self.live())
        if len(live) == 1:
            self.waiting, self.unadmitted = {}, frozenset()
            return None if leading else lambda job: job.implicit or job.phase not in ("", "Pending")
        now, seen, self.waiting, unadmitted = self.clock(), self.waiting, {}, set()
        for job in jobs:
            if not job.implicit and job.phase in ("", "Pending"):
                unadmitted.add(job.uid)
            elif not job.count(*CONFIRMED, *IN_FLIGHT) and not self.owns(job.uid):
                self.waiting[job.uid] = seen.get(job.uid, now)
        self.unadmitted = frozenset(unadmitted)
        later = frozenset(uid for uid, since in self.waiting.items() if now - since < self.share_after)
        if leading:
            return lambda job: job.uid not in later
        return lambda job: (job.implicit or job.phase not in ("", "Pending")) and job.uid not in later

    def owns(self, job_uid: str) -> bool:
        """Whether the job is this replica's share among the live replicas of this cycle's
        `job_filter`: it works the job out first and alone tells why it waits (two replicas
        seeing different nodes would overwrite each other's reasons every cycle)."""
        return len(self.shares) <= 1 or self.shares[zlib.crc32(job_uid.encode()) % len(self.shares)] == self.name

    def release_done(self, client: KubeClient, cache: ClusterCache, podgroups: Mapping[str, dict[str, Any]],
                     lock: Any) -> None:
        """Release the claims of gangs the API shows bound, or of which nothing is in flight."""
        todo = []
        with lock:
            for key in sorted(self.claimed):
                current = podgroups.get(key)
                if current is None:
                    self.claimed.discard(key)
                    continue
                if owner(current) != self.name:
                    continue  # the watch has not shown our claim yet, or it was taken over
                job = cache.jobs.get(key)
                if job is None or job.count(*CONFIRMED) >= job.min_available or job.count(*IN_FLIGHT) == 0:
                    todo.append(current)
        for current in todo:
            meta = current["metadata"]
            annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != OWNER_ANNOTATION}
            body = dict(current, metadata=dict(meta, annotations=annotations))
            try:
                client.request("PUT", path(VOLCANO_SCHEDULING, "podgroups", meta.get("namespace"), meta["name"]),
                               body=body)
                self.claimed.discard(f"{meta.get('namespace')}/{meta['name']}")
                self.released += 1
            except ApiError as err:  # 409: changed meanwhile, tried again next cycle; 404: gone
                if err.code == 404:
                    self.claimed.discard(f"{meta.get('namespace')}/{meta['name']}")
                elif err.code != 409:
                    log.warning("claim on PodGroup %s/%s not released: %s", meta.get("namespace"), meta["name"], err)


class ShardGate:
    """The sink one cycle of a sharded replica writes through: a gang's binds go out only once
    this replica holds the gang's claim, PodGroup statuses only for gangs not another's, queue
    statuses only from the leader. `finish` shows the cache the pods whose decision was dropped
    as the API has them, which releases the nodes they were charged to."""

    def __init__(self, sink: KubeSink, client: KubeClient, cache: ClusterCache, sharding: Sharding,
                 podgroups: Mapping[str, dict[str, Any]]):
        self.sink, self.client, self.cache, self.sharding = sink, client, cache, sharding
        self.podgroups = podgroups
        self.leading = sharding.leader.leading()
        self._live: set[str] | None = None
        self._jobs: dict[str, bool] = {}  # PodGroup key -> may this replica write its decisions
        self.dropped: set[str] = set()  # pods whose decision this replica does not send

    # --- ClusterSink -------------------------------------------------------------------------

    def annotate(self, pod_key: str, annotations: dict[str, str]) -> None:
        if self._allowed(pod_key):
            self.sink.annotate(pod_key, annotations)

    def bind_claims(self, pod_key: str, bindings: tuple[ClaimBinding, ...]) -> None:
        if self._allowed(pod_key):
            self.sink.bind_claims(pod_key, bindings)

    def reserve_device_claims(self, pod_key: str, writes: tuple[DeviceClaimWrite, ...]) -> None:
        if self._allowed(pod_key):
            self.sink.reserve_device_claims(pod_key, writes)

    def bind(self, pod_key: str, node: str) -> None:
        if self._allowed(pod_key):
            self.sink.bind(pod_key, node)

    def nominate(self, pod_key: str, node: str) -> None:
        if self._allowed(pod_key):
            self.sink.nominate(pod_key, node)

    def remove_queue_gate(self, pod_key: str) -> None:
        self.sink.remove_queue_gate(pod_key)

    def evict(self, pod_key: str, reason: str) -> None:
        self.sink.evict(pod_key, reason)

    def update_podgroup_status(self, podgroup_key: str, status: dict[str, Any]) -> None:
        if self._jobs.get(podgroup_key, True) and self._reports(podgroup_key):
            self.sink.update_podgroup_status(podgroup_key, status)

    def pending(self, reasons: Mapping[str, str]) -> dict[str, str]:
        """The why-pending reasons this replica reports: those of the jobs it reports on."""
        return {pod: why for pod, why in reasons.items() if self._reports(self._job_of(pod))}

    def unschedulable(self, podgroups: Mapping[str, str]) -> dict[str, str]:
        return {key: why for key, why in podgroups.items() if self._reports(key)}

    def update_queue_status(self, queue_name: str, status: dict[str, Any]) -> None:
        if self.leading:
            self.sink.update_queue_status(queue_name, status)

    def annotate_queue(self, queue_name: str, annotations: dict[str, str]) -> None:
        if self.leading:
            self.sink.annotate_queue(queue_name, annotations)

    def publish_node_resources(self, node: str, resources: dict[str, str]) -> None:
        self.sink.publish_node_resources(node, resources)

    # --- after the cycle ----------------------------------------------------------------------

    def finish(self, feeder: CacheFeeder, pods: Mapping[str, dict[str, Any]]) -> None:
        """Undo in the cache the placements that were not sent (under the feeder's lock)."""
        for pod_key in sorted(self.dropped):
            current = pods.get(pod_key)
            feeder.bind_failed(pod_key, dict(current) if current is not None else None)

    # --- internals -----------------------------------------------------------------------------

    def live(self) -> set[str]:
        if self._live is None:
            self._live = self.sharding.live()
        return self._live

    def _reports(self, key: str) -> bool:
        """A PodGroup's status and reasons come from the replica holding its claim, else from
        the leader while it waits for enqueue (the others leave it out), else from the one whose
        share it is."""
        held = owner(self.podgroups.get(key) or {})
        if held is not None and held in self.live():
            return held == self.sharding.name
        if key in self.sharding.unadmitted:
            return self.leading
        return self.sharding.owns(key)

    def _job_of(self, pod_key: str) -> str:
        task = self.cache.tasks.get(pod_key)
        return task.job_uid if task is not None and task.job_uid else ""

    def _allowed(self, pod_key: str) -> bool:
        task = self.cache.tasks.get(pod_key)
        job = self.cache.jobs.get(task.job_uid) if task is not None and task.job_uid else None
        if job is None or not needs_claim(job):
            return True
        allowed = self._jobs.get(job.uid)
        if allowed is None:
            allowed = self._jobs[job.uid] = self._claim(job.uid)
        if not allowed:
            self.dropped.add(pod_key)
        return allowed

    def _claim(self, key: str) -> bool:
        """Whether this replica holds the gang's claim now, claiming it if it is free."""
        me = self.sharding.name
        current = self.podgroups.get(key)
        if current is None:
            return False
        if key in self.sharding.claimed:
            if owner(current) in (None, me):  # ours, or the watch has not shown our claim yet
                return True
            self.sharding.claimed.discard(key)  # taken over while this replica's Lease had lapsed
        namespace, name = key.split("/", 1)
        url = path(VOLCANO_SCHEDULING, "podgroups", namespace, name)
        for _ in range(2):  # the store's copy may be stale: one fresh read on 409
            if owner(current) == me:
                self.sharding.claimed.add(key)
                return True
            update = claim(current, me, self.live())
            if update is None:
                break
            try:
                self.client.request("PUT", url, body=update)
            except ApiError as err:
                if err.code != 409:
                    log.warning("claim on PodGroup %s not written: %s", key, err)
                    break
                try:
                    current = self.client.get(url)
                except ApiError:
                    break
                continue
            self.sharding.claimed.add(key)
            self.sharding.claims_won += 1
            return True
        self.sharding.claims_lost += 1
        return False
