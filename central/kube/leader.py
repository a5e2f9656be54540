"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Defaults are kube-scheduler's and Volcano's: lease 15 s, renew deadline 10 s, retry 2 s.
- A candidate takes the Lease when it is free (no holder) or when its record has not changed
  for a whole lease duration *as observed locally*: expiry is judged by the observer's
  monotonic clock, never by comparing the holder's timestamps with ours (clock skew).
- Every write is a PUT conditional on the resourceVersion read, so of two candidates racing
  for an expired Lease exactly one wins (the other gets 409).
- The leader renews every retry period; each API call is bounded by what is left of the renew
  deadline (counted from when the last successful write was sent), so a hung call cannot
  stretch a leadership; at the deadline it has lost, and `on_lost` runs at once.
- A deposed leader steps down and stands again without exiting (`run_terms`). Volcano and
  kube-scheduler exit instead, and the kubelet restarts them: an API server stall long enough to
  cost the lease then stops every replica at once, and each restart waits out a CrashLoopBackOff
  that grows to 5 minutes when stalls repeat (and `caldera up` restarts nothing). What exiting
  guarantees, that nothing more of the old term is sent, the fence gives: each term writes
  through its own `KubeClient.fenced()` client, and `on_lost` sets its fence from the lease
  thread the moment the lease is lost, before the main loop has even noticed. The term's
  cache, reflectors, queues and sink are then dropped and the next term starts from a fresh
  LIST, as a restarted process would.
- The commands give the elector its own client (`KubeClient.fork`): its rate limiter is not
  the one binds queue on (Volcano's separate leader-election client).
- `release()` on a clean stop empties the holder, so a successor takes over at its next retry
  instead of waiting out the lease (Volcano does not; client-go's ReleaseOnCancel does).
A lease is advisory; the API server's resourceVersion and binding checks are the real fence.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from central.kube.client import COORDINATION, ApiError, KubeClient, path

log = logging.getLogger(__name__)


def _micro_time() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 on_lost: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 labels: dict[str, str] | None = None):
        self.client = client
        self.url = path(COORDINATION, "leases", namespace, name)
        self.collection = path(COORDINATION, "leases", namespace)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.on_lost = on_lost  # called from the lease thread the moment leadership is lost
        self.clock = clock
        self.labels = labels  # on the Lease this elector creates (others find shard Leases by label)
        self.leading = threading.Event()
        self.lost = threading.Event()
        self._record: dict[str, Any] | None = None  # the Lease as last read or written
        self._observed: tuple[str, float] | None = None  # (resourceVersion, monotonic time first seen)
        self._last_renew = 0.0  # when the last successful write was *sent*: the deadline counts from there
        self._thread: threading.Thread | None = None

    # --- public -----------------------------------------------------------------------------

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or `stop` is set (False); then keep renewing
        in the background. `lost` is set if renewal fails for the renew deadline."""
        while not stop.is_set():
            if self._try(self.clock() + self.renew_deadline):
                self.lost.clear()
                self.leading.set()
                self._thread = threading.Thread(target=self._renew_loop, args=(stop,), name="lease", daemon=True)
                self._thread.start()
                log.info("%s leads %s/%s", self.identity, self.namespace, self.name)
                return True
            stop.wait(self.retry_period)
        return False

    def release(self) -> None:
        """Give the Lease up (clean stop). Only if we still hold it."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        if self._thread is not None:
            self._thread.join(self.renew_deadline + 1)
        record = self._record
        if self.lost.is_set() or record is None or record["spec"].get("holderIdentity") != self.identity:
            return
        spec = dict(record["spec"], holderIdentity="", leaseDurationSeconds=1, renewTime=_micro_time())
        try:
            self.client.request("PUT", self.url, body=dict(record, spec=spec), timeout=self.renew_deadline)
            log.info("%s released %s/%s", self.identity, self.namespace, self.name)
        except Exception as err:  # the lease then expires on its own
            log.warning("releasing the lease failed: %s", err)

    # --- internals ----------------------------------------------------------------------------

    def _renew_loop(self, stop: threading.Event) -> None:
        """Renew every retry period. Every call is bounded by what is left of the renew deadline
        (counted from the last successful write), so a hung API call cannot stretch a leadership
        past it: at the deadline, or when another holder is seen, leadership is lost."""
        while self.leading.is_set() and not stop.is_set():
            deadline = self._last_renew + self.renew_deadline
            if self.clock() >= deadline or self._held_by_other():
                self._lose()
                return
            if self._try(deadline):
                stop.wait(self.retry_period)
            else:
                stop.wait(max(0.0, min(self.retry_period, deadline - self.clock())))

    def _lose(self) -> None:
        log.error("%s lost the lease %s/%s", self.identity, self.namespace, self.name)
        self.leading.clear()
        self.lost.set()
        if self.on_lost is not None:
            self.on_lost()

    def _held_by_other(self) -> bool:
        holder = (self._record or {}).get("spec", {}).get("holderIdentity")
        return bool(holder) and holder != self.identity

    def _call(self, method: str, url: str, deadline: float, body: Any = None) -> dict[str, Any]:
        left = deadline - self.clock()
        if left <= 0:
            raise TimeoutError("the renew deadline has passed")
        return self.client.request(method, url, body=body, timeout=left)

    def _try(self, deadline: float) -> bool:
        """One attempt to take or renew the Lease, every call bounded by `deadline`."""
        started, now = self.clock(), _micro_time()
        try:
            try:
                current = self._call("GET", self.url, deadline)
            except ApiError as err:
                if err.code != 404:
                    raise
                self._record = self._call("POST", self.collection, deadline, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace, **(
                        {"labels": self.labels} if self.labels else {})},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                             "acquireTime": now, "renewTime": now, "leaseTransitions": 0}})
                self._last_renew = started
                return True
            self._record = current
            spec = current.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            version = current["metadata"]["resourceVersion"]
            if self._observed is None or self._observed[0] != version:
                self._observed = (version, self.clock())
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            expired = self.clock() - self._observed[1] > duration
            if holder and holder != self.identity and not expired:
                return False
            mine = holder == self.identity
            new_spec = dict(spec, holderIdentity=self.identity, leaseDurationSeconds=int(self.lease_duration),
                            renewTime=now)
            if not mine:
                new_spec.update(acquireTime=now, leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
            self._record = self._call("PUT", self.url, deadline, dict(current, spec=new_spec))
            self._last_renew = started
            return True
        except ApiError as err:
            log.info("lease %s/%s: %s", self.namespace, self.name, err)
            return False
        except Exception as err:  # network trouble or a timeout: not renewed this round
            log.warning("lease %s/%s: %s: %s", self.namespace, self.name, type(err).__name__, err)
            return False


def run_terms(client: KubeClient, elector: LeaderElector | None, stop: threading.Event,
              run_term: Callable[[KubeClient], int]) -> int:
    """`run_term(term_client)` for one term after another, each writing through a fenced client
    of its own that losing the lease fences at once; returns when a term ends for another
    reason than a lost lease (a stop, an error), with that term's exit code."""
    while True:
        term = client.fenced()
        if elector is not None:
            elector.on_lost = term.fence.set if term.fence is not None else None
        code = run_term(term)
        if stop.is_set() or elector is None or not elector.lost.is_set():
            return code
        log.warning("stepped down after losing the lease %s/%s; standing again as a candidate, from a fresh cache",
                    elector.namespace, elector.name)
