"""Pods of this node from the API server: one LIST, then a WATCH from its resourceVersion.

The LIST asks for `resourceVersion=0`, which the API server answers from its watch cache, and
both calls carry `fieldSelector=spec.nodeName=<node>`, so a node costs the API server one cheap
LIST at start and one long WATCH (re-opened every 5 to 10 minutes, jittered as client-go does,
resuming from the last resourceVersion or bookmark). A `410 Gone` (the version expired) is the
only thing that causes a new LIST. At steady state that is 0.1 to 0.2 requests per node per
minute, against 60 for a poll every second.

The watch runs on its own thread; `pods()` returns the current set. Until the first LIST has
succeeded, and while the stream is broken, `pods()` raises, so the agent counts the source as
failing (readiness) and keeps the last good list.
"""

from __future__ import annotations

import json
import logging
import random
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from nodeagent.pods import PodInfo, pod_info

log = logging.getLogger("nodeagent.pods")


class WatchExpired(Exception):
    """The server no longer has the resourceVersion the watch asked for (410 Gone)."""


class WatchPodSource:
    def __init__(self, api_url: str, node_name: str, token_file: Path | None, ca_file: Path | None,
                 default_level: str = "", *, min_watch_s: int = 300, timeout_s: float = 10.0,
                 backoff_max_s: float = 30.0, rng: random.Random | None = None,
                 opener: Callable[..., Any] = urllib.request.urlopen) -> None:
        self._base = api_url.rstrip("/") + "/api/v1/pods"
        self._selector = urllib.parse.quote(f"spec.nodeName={node_name}")
        self._token_file, self._default = token_file, default_level
        self._ssl = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
        self._min_watch_s, self._timeout, self._backoff_max = min_watch_s, timeout_s, backoff_max_s
        self._rng, self._open = rng or random.Random(), opener
        self._lock = threading.Lock()
        self._pods: dict[str, PodInfo] = {}
        self._version = ""
        self._healthy = False
        self._error: Exception | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.requests: Counter[str] = Counter()  # list | watch: what this node asked of the API server

    def pods(self) -> list[PodInfo]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
            self._thread.start()
        with self._lock:
            if not self._healthy:
                raise RuntimeError(f"pod watch not in sync: {self._error or 'starting'}")
            return sorted(self._pods.values(), key=lambda p: p.uid)

    def close(self) -> None:
        self._stop.set()

    def _get(self, query: str, timeout: float) -> Any:
        request = urllib.request.Request(f"{self._base}?fieldSelector={self._selector}&{query}")
        request.add_header("Accept", "application/json")
        if self._token_file is not None:
            request.add_header("Authorization", f"Bearer {self._token_file.read_text().strip()}")
        return self._open(request, timeout=timeout, context=self._ssl)

    def list_once(self) -> None:
        """LIST from the watch cache; replaces the pod set and the resourceVersion."""
        self.requests["list"] += 1
        with self._get("resourceVersion=0", self._timeout) as answer:
            doc = json.load(answer)
        items = doc.get("items") if isinstance(doc, dict) else None
        pods = [p for p in (pod_info(i, self._default) for i in items or [] if isinstance(i, dict)) if p]
        version = str(((doc.get("metadata") or {}) if isinstance(doc, dict) else {}).get("resourceVersion", ""))
        with self._lock:
            self._pods, self._version = {p.uid: p for p in pods}, version
            self._healthy, self._error = True, None

    def watch_once(self) -> None:
        """One WATCH until the server ends it; raises WatchExpired on 410."""
        seconds = self._rng.randint(self._min_watch_s, 2 * self._min_watch_s)
        query = (f"watch=1&allowWatchBookmarks=true&timeoutSeconds={seconds}"
                 f"&resourceVersion={urllib.parse.quote(self._version)}")
        self.requests["watch"] += 1
        try:
            answer = self._get(query, seconds + self._timeout)
        except urllib.error.HTTPError as exc:
            if exc.code == 410:
                raise WatchExpired() from None
            raise
        with self._lock:
            self._healthy, self._error = True, None
        with answer:
            for line in answer:
                if self._stop.is_set():
                    return
                if line.strip():
                    self._event(json.loads(line))

    def _event(self, event: Any) -> None:
        kind = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            return
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise WatchExpired()
            raise RuntimeError(f"watch error: {str(obj.get('message'))[:200]}")
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        with self._lock:
            self._version = str(meta.get("resourceVersion", self._version))
            if kind == "BOOKMARK":
                return
            uid = meta.get("uid")
            pod = pod_info(obj, self._default) if kind in ("ADDED", "MODIFIED") else None
            if pod is not None:
                self._pods[pod.uid] = pod
            elif isinstance(uid, str):
                self._pods.pop(uid, None)  # deleted, or no longer Running/Pending

    def _run(self) -> None:
        attempt = 0
        listed = False
        while not self._stop.is_set():
            try:
                if not listed:
                    self.list_once()
                    listed = True
                started = time.monotonic()
                self.watch_once()
                if time.monotonic() - started >= 1.0:
                    attempt = 0
                    continue
                # A watch the server ends at once (a proxy in the way) must not become a hot loop.
                self._stop.wait(min(self._backoff_max, 0.5 * 2 ** min(attempt, 10)))
                attempt += 1
                continue
            except WatchExpired:
                listed = False  # the one case that costs a new LIST
                continue
            except (OSError, ValueError, RuntimeError) as exc:  # network, HTTP errors, bad JSON
                with self._lock:
                    self._healthy, self._error = False, exc
                log.debug("pod watch failed: %s", exc)
                listed = listed and not isinstance(exc, ValueError)
            attempt += 1
            ceiling = min(self._backoff_max, 0.5 * 2 ** attempt)
            self._stop.wait(ceiling / 2 + self._rng.uniform(0, ceiling / 2))
