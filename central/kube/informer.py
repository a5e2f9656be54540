"""List+watch of one resource, level-triggered, the way client-go's reflector works.

A `Reflector` lists the resource once, hands every object to its handler as ADDED, and then
watches from the list's resourceVersion. When a stream ends (server timeout, network error,
`close`) it resumes from the last version it saw, so nothing is missed or replayed. When the
server answers 410 Gone (the version was compacted away) it lists again and turns the
difference into events: objects that vanished meanwhile become DELETED, so the handler never
keeps a ghost. `synced` is set after the first complete list: the scheduler runs no session
before every reflector it depends on has synced (Volcano #1417: nodes synced after pods ->
over-commit).

An `optional` reflector watches a resource the cluster may not serve (an API group left off,
such as resource.k8s.io on an older control plane): a 404 on its list counts as an empty,
synced list, so nothing waits for it, and the list is retried at the longest backoff, so the
API is picked up once the server serves it. A 403 (the component's RBAC lacks the list) is
treated the same, with a warning: a missing grant for an optional API must not stop the rest.

The reflector also keeps the latest object of every key (`objects`), which the binder, the
status writer and the controllers read instead of asking the API server.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from central.kube.client import ApiError, KubeClient, WatchStream

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], None]  # (ADDED | MODIFIED | DELETED, object)


def object_key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else meta["name"]


class Reflector:
    def __init__(self, client: KubeClient, url: str, handler: Handler, *,
                 query: dict[str, str] | None = None, watch_timeout: int = 300,
                 backoff: tuple[float, float] = (0.2, 10.0), optional: bool = False):
        self.client = client
        self.url = url
        self.handler = handler
        self.query = dict(query or {})
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.optional = optional
        self.served = True  # False while an optional resource answers 404
        self.objects: dict[str, dict[str, Any]] = {}
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.relists = 0  # lists after the first, e.g. on 410 Gone
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread = threading.Thread(target=self._run, name=f"reflector {url}", daemon=True)

    def start(self) -> "Reflector":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.ident is not None:  # never started: nothing to wait for
            self._thread.join(timeout)

    # --- the loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        delay = self.backoff[0]
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
                delay = self.backoff[0]
            except ApiError as err:
                if err.code in (403, 404) and self.optional and self.resource_version is None:
                    self._not_served(err)
                    continue
                if err.code == 410:
                    log.info("%s: resourceVersion %s expired, listing again", self.url, self.resource_version)
                    self.resource_version = None
                    continue
                log.warning("%s: %s; retrying in %.1fs", self.url, err, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])
            except Exception as err:  # network errors from urllib3 and the like: resume later
                if self._stop.is_set():  # stop() closed the stream under the watch
                    return
                log.warning("%s: %s: %s; retrying in %.1fs", self.url, type(err).__name__, err, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])

    def _not_served(self, err: ApiError) -> None:
        if self.served and err.code == 403:
            log.warning("%s: forbidden to this component (%s); treated as empty, asking again every %.0fs",
                        self.url, err.message, self.backoff[1])
        elif self.served:
            log.info("%s: not served by this cluster; treated as empty, asking again every %.0fs",
                     self.url, self.backoff[1])
        self.served = False
        self.synced.set()
        self._stop.wait(self.backoff[1])

    def _list(self) -> None:
        answer = self.client.request("GET", self.url, self.query, timeout=120.0)
        fresh = {object_key(obj): obj for obj in answer.get("items") or []}
        kind = (answer.get("kind") or "").removesuffix("List")
        for key in list(self.objects):
            if key not in fresh:
                self._deliver("DELETED", self.objects[key])
        for obj in fresh.values():
            # list items carry no kind; the cache needs it
            obj.setdefault("kind", kind)
            obj.setdefault("apiVersion", answer.get("apiVersion"))
            old = self.objects.get(object_key(obj))
            if old is None or old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._deliver("MODIFIED" if old else "ADDED", obj)
        self.resource_version = answer["metadata"]["resourceVersion"]
        self.served = True
        if self.synced.is_set():
            self.relists += 1
        self.synced.set()

    def _watch(self) -> None:
        query = dict(self.query, resourceVersion=self.resource_version, allowWatchBookmarks="true",
                     timeoutSeconds=str(self.watch_timeout))
        self._stream = self.client.stream(self.url, query, timeout=self.watch_timeout + 30)
        if self._stop.is_set():
            self._stream.close()
        for event in self._stream:
            kind, obj = event.get("type") or "", event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(obj.get("code") or 500, obj.get("reason") or "Error", obj.get("message") or "")
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if kind != "BOOKMARK":
                self._deliver(kind, obj)
            if version:
                self.resource_version = version
            if self._stop.is_set():
                return

    def _deliver(self, kind: str, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        try:
            self.handler(kind, obj)
        except Exception:  # one bad object must never stop the feed
            log.exception("%s: handler failed on %s %s", self.url, kind, key)
