"""Thin loops around the pure controllers of central.controllers: the shared `ControllerLoop`.

Each loop is level-triggered, like Volcano's and client-go's: reflectors keep the objects
current, every event names the key of the object to reconcile (a pod event names its Job),
a `WorkQueue` hands each key to one worker at a time, and the worker calls the pure function
with what the reflectors hold and applies the decision it returns. Applying is idempotent:
a create that meets 409 AlreadyExists, a delete that meets 404, are done already; a status
write carries the resourceVersion the reflector saw and a 409 just reconciles again. A key
that keeps failing is retried with backoff, and dropped after `MAX_REQUEUE` retries (Volcano's
max-requeue-num); a Job then gets an Event and is terminated, as Volcano's handleJobError does.
A key whose namespace is being deleted is not retried: its writes meet 403 NamespaceTerminating,
404 (the namespace, or an object the cascade took) or 409; each such key is logged once, at
debug, instead of a warning per retry (deleting a namespace of 200 Jobs logged thousands).

One module per controller beside this one: `jobs`, `queues`, `podgroups`, `hypernodes`, `cronjobs`,
`jobflows`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from central.kube.client import (
    CORE,
    VOLCANO_BATCH,
    VOLCANO_BUS,
    VOLCANO_FLOW,
    VOLCANO_SCHEDULING,
    ApiError,
    KubeClient,
    path,
)
from central.kube.events import EventRecorder
from central.kube.informer import Reflector
from central.kube.workqueue import WorkQueue

log = logging.getLogger(__name__)

MAX_REQUEUE = 15
WRITTEN_MEMO = 10_000  # objects whose last written content a loop remembers
GONE_CODES = (403, 404, 409)  # what a write meets while its namespace is deleted


# kind -> (API prefix, plural) for the objects the controllers create and delete
URLS = {
    "Pod": (CORE, "pods"), "Service": (CORE, "services"), "ConfigMap": (CORE, "configmaps"),
    "Secret": (CORE, "secrets"), "PersistentVolumeClaim": (CORE, "persistentvolumeclaims"),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies"),
    "PodGroup": (VOLCANO_SCHEDULING, "podgroups"), "Queue": (VOLCANO_SCHEDULING, "queues"),
    "Job": (VOLCANO_BATCH, "jobs"), "Command": (VOLCANO_BUS, "commands"), "CronJob": (VOLCANO_BATCH, "cronjobs"),
    "JobFlow": (VOLCANO_FLOW, "jobflows"), "JobTemplate": (VOLCANO_FLOW, "jobtemplates"),
}


def _content(obj: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}, sort_keys=True)


def url_for(kind: str, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
    prefix, plural = URLS[kind]
    return path(prefix, plural, namespace, name, sub)


class ControllerLoop:
    """Workers draining a WorkQueue into `sync(key)`; subclasses wire reflectors to keys."""

    name = "controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 3):
        self.client = client
        self.events = events
        self.queue = WorkQueue()
        self.workers = workers
        self.reflectors: list[Reflector] = []
        self.syncs = 0
        self._threads: list[threading.Thread] = []
        self._written: OrderedDict[str, str] = OrderedDict()  # object -> content last written (replace)
        self._written_lock = threading.Lock()
        self._gone_logged: OrderedDict[str, None] = OrderedDict()  # keys logged as going with their namespace

    def watch(self, url: str, to_keys: Callable[[dict[str, Any]], list[str]], **kw: Any) -> Reflector:
        def handler(_: str, obj: dict[str, Any]) -> None:
            for key in to_keys(obj):
                self.queue.add(key)
        reflector = Reflector(self.client, url, handler, **kw)
        self.reflectors.append(reflector)
        return reflector

    def synced(self) -> bool:
        return all(r.synced.is_set() for r in self.reflectors)

    def start_watching(self) -> None:
        for reflector in self.reflectors:
            reflector.start()

    def start_workers(self) -> None:
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking keys and wait for the workers to finish the one each holds (a sync is
        not interrupted mid-write), and for the reflectors to end."""
        self.queue.close()
        for reflector in self.reflectors:
            reflector.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("%s: worker %s still busy %.0f s after stop", self.name, thread.name, timeout)
        for reflector in self.reflectors:
            reflector.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while (key := self.queue.get()) is not None:
            try:
                requeue = self.sync(key)
                self.queue.forget(key)
                if requeue is not None:
                    self.queue.add_after(key, requeue)
            except Exception as err:  # ApiError, network, or a bug: retry with backoff, never die
                if self._going_with_namespace(key, err):
                    self.queue.forget(key)
                elif self.queue.failures(key) >= MAX_REQUEUE:  # Volcano: NumRequeues < maxRequeueNum requeues
                    log.error("%s %s: giving up after %d retries: %s", self.name, key, MAX_REQUEUE, err)
                    self.queue.forget(key)
                    self.gave_up(key, err)
                else:
                    delay = self.queue.retry(key)
                    log.warning("%s %s: %s; retrying in %.2fs", self.name, key, err, delay)
            finally:
                self.syncs += 1
                self.queue.done(key)

    def _going_with_namespace(self, key: str, err: Exception) -> bool:
        """Whether `err` is a write meeting the deletion of `key`'s namespace (then logged once, at
        debug): the API server says the namespace is terminating or gone, or a 404/409 hits a key
        whose own object is being deleted (`being_deleted`). Anything else is a real error."""
        if not isinstance(err, ApiError) or err.code not in GONE_CODES or "/" not in key:
            return False
        namespace = key.split("/", 1)[0]
        said = ("being terminated" in err.message if err.code == 403
                else err.code == 404 and f'namespaces "{namespace}" not found' in err.message)
        if not said and (err.code == 403 or not self.being_deleted(key)):
            return False
        with self._written_lock:
            first = key not in self._gone_logged
            self._gone_logged[key] = None
            while len(self._gone_logged) > WRITTEN_MEMO:
                self._gone_logged.popitem(last=False)
        if first:
            log.debug("%s %s: its namespace is being deleted (%s); not retried", self.name, key, err)
        return True

    def being_deleted(self, key: str) -> bool:
        """Whether the object `key` names is gone or has a deletionTimestamp (by the loop's reflectors)."""
        return False

    def sync(self, key: str) -> float | None:
        """Reconcile one key; return seconds after which to look again, or None."""
        raise NotImplementedError

    def gave_up(self, key: str, err: Exception) -> None:
        pass

    # --- idempotent API verbs ---------------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> bool:
        """True if created, False if it existed already."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        try:
            self.client.create(url_for(obj["kind"], namespace), obj)
            return True
        except ApiError as err:
            if err.code != 409:
                raise
            return False

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        try:
            self.client.delete(url_for(kind, namespace, name))
        except ApiError as err:
            if err.code != 404:
                raise

    def replace(self, obj: dict[str, Any]) -> None:
        """Make the object say what `obj` says (the svc plugin's host lists after a scale), by
        delete and create: the controllers may neither read nor update ConfigMaps (an update
        could claim anyone's object by adding a Job owner; policies.yaml checks the old object
        on delete). Skipped when this process last wrote the same content."""
        meta = obj["metadata"]
        if self._written.get(self._written_key(obj)) == _content(obj):
            return
        self.delete(obj["kind"], meta.get("namespace"), meta["name"])
        self.create(obj)
        self._remember(obj)

    @staticmethod
    def _written_key(obj: dict[str, Any]) -> str:
        return f"{obj['kind']}/{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"

    def _remember(self, obj: dict[str, Any]) -> None:
        with self._written_lock:
            self._written[self._written_key(obj)] = _content(obj)
            self._written.move_to_end(self._written_key(obj))
            while len(self._written) > WRITTEN_MEMO:
                self._written.popitem(last=False)

    def write_status(self, kind: str, obj: dict[str, Any], status: dict[str, Any]) -> None:
        """PUT /status conditional on the resourceVersion we saw; a 409 raises (reconcile again)."""
        meta = obj["metadata"]
        self.client.request("PUT", url_for(kind, meta.get("namespace"), meta["name"], "status"),
                            body=dict(obj, status=status))
