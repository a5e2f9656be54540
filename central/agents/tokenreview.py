"""Who is streaming? An agent's projected ServiceAccount token, checked with TokenReview.

The agent's pod mounts a token for the audience `caldera-scheduler` (so a token stolen from
this stream is useless against the API server, and a token for the API server is useless
here). The API server says whether it is valid, for whom, and for which pod's node: a bound
token carries `authentication.kubernetes.io/node-name` in the user's extra fields (Kubernetes
1.30+). The stream is entitled to that node only. Answers are cached for `ttl_s` per token
(hashed), and the token's own `exp` ends the entitlement, so a revoked pod's token stops
working within a minute and an expired one at once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from central.agents.server import AgentIdentity, Unauthenticated
from central.kube.client import ApiError, KubeClient

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
NODE_NAME = "authentication.kubernetes.io/node-name"
AUDIENCE = "caldera-scheduler"
AGENT_ACCOUNT = "caldera-system:caldera-nodeagent"


def identity_from_review(status: dict[str, Any], audience: str, account: str, token: str) -> AgentIdentity:
    """The agent a TokenReview status names, or Unauthenticated saying why not (pure)."""
    if not status.get("authenticated"):
        raise Unauthenticated(status.get("error") or "the API server did not authenticate it")
    if audience not in (status.get("audiences") or []):
        raise Unauthenticated(f"not issued for the audience {audience!r}")
    user = status.get("user") or {}
    username = f"system:serviceaccount:{account}"
    if user.get("username") != username:
        raise Unauthenticated(f"{user.get('username')!r} is not the agent's ServiceAccount {username}")
    nodes = (user.get("extra") or {}).get(NODE_NAME) or []
    if len(nodes) != 1 or not nodes[0]:
        raise Unauthenticated("the token names no node (it must be a pod-bound projected token)")
    return AgentIdentity(nodes[0], _expiry(token))


def _expiry(token: str) -> float | None:
    """The `exp` claim; only read after the API server has verified the token."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


MAX_CACHED = 4096  # tokens remembered; the earliest to expire go first


class TokenReviewer:
    """`Authenticator` for `ReceiverServer`: TokenReview with a short per-token cache (by the
    token's hash, bounded), whose accepted tokens `cached` answers without blocking."""

    def __init__(self, client: KubeClient, audience: str = AUDIENCE, account: str = AGENT_ACCOUNT,
                 ttl_s: float = 60.0, clock: Callable[[], float] = time.time):
        self.client, self.audience, self.account = client, audience, account
        self.ttl_s, self.clock = ttl_s, clock
        self._cache: dict[str, tuple[float, AgentIdentity | str]] = {}
        self._lock = threading.Lock()

    def cached(self, token: str) -> AgentIdentity | None:
        """The identity of a token reviewed and accepted within the TTL; None otherwise."""
        key = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
        if hit is None or hit[0] <= self.clock() or isinstance(hit[1], str):
            return None
        return hit[1]

    def __call__(self, token: str) -> AgentIdentity:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self.clock()
        with self._lock:
            hit = self._cache.get(key)
        if hit is None or hit[0] <= now:
            hit = (now + self.ttl_s, self._review(token))
            with self._lock:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= MAX_CACHED:  # refusals first, then the earliest to expire
                    order = sorted(self._cache, key=lambda k: (not isinstance(self._cache[k][1], str),
                                                               self._cache[k][0]))
                    for k in order[:len(self._cache) - MAX_CACHED + 1]:
                        del self._cache[k]
                self._cache[key] = hit
        if isinstance(hit[1], str):
            raise Unauthenticated(hit[1])
        return hit[1]

    def _review(self, token: str) -> AgentIdentity | str:
        try:
            review = self.client.create(TOKEN_REVIEWS, {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": token, "audiences": [self.audience]}})
        except ApiError as err:  # not cached as a refusal: the next connect asks again
            raise Unauthenticated(f"TokenReview failed: {err}") from None
        try:
            return identity_from_review(review.get("status") or {}, self.audience, self.account, token)
        except Unauthenticated as err:
            return str(err)
