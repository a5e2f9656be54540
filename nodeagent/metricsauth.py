"""Who may read the agent's metrics: a bearer token the API server vouches for, as
kube-rbac-proxy checks one.

The metrics name every pod and namespace on the node. With `exporter.authorize` on, a scrape
of /metrics must carry `Authorization: Bearer <token>`: a TokenReview says whose token it is,
and a SubjectAccessReview whether that user may `get` the non-resource URL `/metrics` (the
RBAC Prometheus already holds for the kubelet's and the API server's metrics). Answers are
cached per token (by its hash) for `ttl_s`, at most `MAX_CACHED` of them, refusals evicted
first, so a scrape every few seconds costs two reviews a minute, and a flood of made-up tokens
cannot grow the cache. /healthz and /readyz stay open: the kubelet's probes carry no token.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
MAX_CACHED = 4096

# (path, body) -> the API server's answer; raises when it cannot be asked
Create = Callable[[str, dict[str, Any]], dict[str, Any]]


def decide(create: Create, token: str, path: str = "/metrics") -> tuple[int, str]:
    """(200, user), (401, why) for a token the API server does not accept, (403, why) for a
    user it does not allow `get` on `path`."""
    review = create(TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                    "spec": {"token": token}})
    status = review.get("status") or {}
    if not status.get("authenticated"):
        return 401, str(status.get("error") or "the API server did not authenticate the token")
    user = status.get("user") or {}
    access = create(ACCESS_REVIEWS, {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": user.get("username"), "uid": user.get("uid"), "groups": user.get("groups") or [],
        "extra": user.get("extra") or {}, "nonResourceAttributes": {"path": path, "verb": "get"}}})
    if not (access.get("status") or {}).get("allowed"):
        return 403, f"{user.get('username')} may not get {path}"
    return 200, str(user.get("username"))


class MetricsAuthorizer:
    def __init__(self, create: Create, ttl_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.create, self.ttl_s, self.clock = create, ttl_s, clock
        self._cache: dict[str, tuple[float, int, str]] = {}
        self._lock = threading.Lock()

    def check(self, authorization: str | None) -> tuple[int, str]:
        """The answer for one request's Authorization header."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401, "a bearer token is required"
        key = hashlib.sha256(token.strip().encode()).hexdigest()
        now = self.clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        try:
            code, why = decide(self.create, token.strip())
        except Exception as err:  # noqa: BLE001 - the API server unreachable: refuse, remember nothing
            return 503, f"cannot review the token: {err}"
        with self._lock:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            if len(self._cache) >= MAX_CACHED:  # refusals first, then the earliest to expire
                for k in sorted(self._cache, key=lambda k: (self._cache[k][1] == 200, self._cache[k][0]))[
                        :len(self._cache) - MAX_CACHED + 1]:
                    del self._cache[k]
            self._cache[key] = (now + self.ttl_s, code, why)
        return code, why
