"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Defaults are kube-scheduler's and Volcano's: lease 15 s, renew deadline 10 s, retry 2 s.
- A candidate takes the Lease when it is free (no holder) or when its record has not changed
  for a whole lease duration *as observed locally*: expiry is judged by the observer's
  monotonic clock, never by comparing the holder's timestamps with ours (clock skew).
- Every write is a PUT conditional on the resourceVersion read, so of two candidates racing
  for an expired Lease exactly one wins (the other gets 409).
- The leader renews every retry period; if it cannot renew for `renew_deadline` it has lost,
  and the caller must stop scheduling at once (Volcano exits the process).
- `release()` on shutdown empties the holder, so a successor takes over at its next retry
  instead of waiting out the lease (Volcano does not; client-go's ReleaseOnCancel does).
A lease is advisory; the API server's resourceVersion and binding checks are the real fence.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any

from central.kube.client import COORDINATION, ApiError, KubeClient, path

log = logging.getLogger(__name__)


def _micro_time() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, client: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0):
        self.client = client
        self.url = path(COORDINATION, "leases", namespace, name)
        self.collection = path(COORDINATION, "leases", namespace)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.leading = threading.Event()
        self.lost = threading.Event()
        self._record: dict[str, Any] | None = None  # the Lease as last read or written
        self._observed: tuple[str, float] | None = None  # (resourceVersion, monotonic time first seen)
        self._last_renew = 0.0
        self._thread: threading.Thread | None = None

    # --- public -----------------------------------------------------------------------------

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or `stop` is set (False); then keep renewing
        in the background. `lost` is set if renewal fails for the renew deadline."""
        while not stop.is_set():
            if self._try():
                self.leading.set()
                self._thread = threading.Thread(target=self._renew_loop, args=(stop,), name="lease", daemon=True)
                self._thread.start()
                log.info("%s leads %s/%s", self.identity, self.namespace, self.name)
                return True
            stop.wait(self.retry_period)
        return False

    def release(self) -> None:
        """Give the Lease up (shutdown). Only if we still hold it."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        if self._thread is not None:
            self._thread.join(self.retry_period + 1)
        record = self._record
        if record is None or record["spec"].get("holderIdentity") != self.identity:
            return
        spec = dict(record["spec"], holderIdentity="", leaseDurationSeconds=1, renewTime=_micro_time())
        try:
            self.client.request("PUT", self.url, body=dict(record, spec=spec))
            log.info("%s released %s/%s", self.identity, self.namespace, self.name)
        except ApiError as err:
            log.warning("releasing the lease failed: %s", err)

    # --- internals ----------------------------------------------------------------------------

    def _renew_loop(self, stop: threading.Event) -> None:
        while self.leading.is_set() and not stop.is_set():
            if self._try():
                self._last_renew = time.monotonic()
            elif time.monotonic() - self._last_renew > self.renew_deadline or self._held_by_other():
                log.error("%s lost the lease %s/%s", self.identity, self.namespace, self.name)
                self.leading.clear()
                self.lost.set()
                return
            stop.wait(self.retry_period)

    def _held_by_other(self) -> bool:
        holder = (self._record or {}).get("spec", {}).get("holderIdentity")
        return bool(holder) and holder != self.identity

    def _try(self) -> bool:
        """One attempt to take or renew the Lease."""
        now = _micro_time()
        try:
            current = self.client.get_or_none(self.url)
            if current is None:
                self._record = self.client.create(self.collection, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                             "acquireTime": now, "renewTime": now, "leaseTransitions": 0}})
                self._last_renew = time.monotonic()
                return True
            self._record = current
            spec = current.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            version = current["metadata"]["resourceVersion"]
            if self._observed is None or self._observed[0] != version:
                self._observed = (version, time.monotonic())
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            expired = time.monotonic() - self._observed[1] > duration
            if holder and holder != self.identity and not expired:
                return False
            mine = holder == self.identity
            new_spec = dict(spec, holderIdentity=self.identity, leaseDurationSeconds=int(self.lease_duration),
                            renewTime=now)
            if not mine:
                new_spec.update(acquireTime=now, leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
            self._record = self.client.request("PUT", self.url, body=dict(current, spec=new_spec))
            self._last_renew = time.monotonic()
            return True
        except ApiError as err:
            log.info("lease %s/%s: %s", self.namespace, self.name, err)
            return False
        except Exception as err:  # network trouble: not leading this round
            log.warning("lease %s/%s: %s: %s", self.namespace, self.name, type(err).__name__, err)
            return False
