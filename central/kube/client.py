"""The one way Caldera talks to the Kubernetes API: `KubeClient.request`.

It is built on the official client's `ApiClient` (kubeconfig or in-cluster configuration,
TLS, bearer tokens, urllib3 connection pool) but asks for raw JSON instead of the generated
pydantic models:
- the scheduler cache takes objects exactly as the API returns them, so decoding every watch
  event into a model and back would cost more than the rest of the event handling;
- Volcano's CRDs are dicts through `CustomObjectsApi` anyway;
- the generated `create_namespaced_pod_binding` fails while decoding its own response
  (kubernetes-client/python #825).
A token bucket caps requests per second (the `--kube-api-qps` / `--kube-api-burst` of
Volcano); errors become `ApiError` with the HTTP status, so callers branch on 404/409/410.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import orjson
import urllib3
import yaml
from kubernetes import client, config

from central.errors import InputError

AUTH_REUSE = 1.0  # seconds the auth headers are reused before the hooks are asked again
CORE = "/api/v1"
VOLCANO_SCHEDULING = "/apis/scheduling.volcano.sh/v1beta1"
VOLCANO_BATCH = "/apis/batch.volcano.sh/v1alpha1"
VOLCANO_BUS = "/apis/bus.volcano.sh/v1alpha1"
VOLCANO_TOPOLOGY = "/apis/topology.volcano.sh/v1alpha1"
VOLCANO_FLOW = "/apis/flow.volcano.sh/v1alpha1"
VOLCANO_SHARD = "/apis/shard.volcano.sh/v1alpha1"
COORDINATION = "/apis/coordination.k8s.io/v1"
SCHEDULING = "/apis/scheduling.k8s.io/v1"
SCHEDULING_BETA = "/apis/scheduling.k8s.io/v1beta1"  # Kubernetes' gang API (Workload, PodGroup)
POLICY = "/apis/policy/v1"
BATCH = "/apis/batch/v1"
STORAGE = "/apis/storage.k8s.io/v1"
RESOURCE = "/apis/resource.k8s.io/v1"  # Dynamic Resource Allocation


class ApiError(Exception):
    """A non-2xx answer. `code` is the HTTP status; `reason` the Status reason (Conflict, ...)."""

    def __init__(self, code: int, reason: str, message: str):
        super().__init__(f"{code} {reason}: {message}")
        self.code, self.reason, self.message = code, reason, message


class RateLimiter:
    """Token bucket: `qps` tokens a second, at most `burst` saved up. Thread-safe."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.qps, self.burst = qps, burst
        self.clock, self.sleep = clock, sleep
        self._tokens = float(burst)
        self._stamp = clock()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait:
            self.sleep(wait)


def path(group: str, resource: str, namespace: str | None = None, name: str | None = None,
         sub: str | None = None) -> str:
    """`/api/v1/namespaces/ns/pods/name/binding` and the like."""
    parts = [group]
    if namespace:
        parts += ["namespaces", namespace]
    parts.append(resource)
    if name:
        parts.append(name)
    if sub:
        parts.append(sub)
    return "/".join(parts)


class KubeClient:
    def __init__(self, api_client: client.ApiClient, qps: float = 50.0, burst: int = 100):
        self.api = api_client
        self.limiter = RateLimiter(qps, burst)
        self._base = api_client.configuration.host.rstrip("/")
        self._prefix = urlsplit(self._base).path  # a server behind a proxy's path keeps it
        self._token: tuple[float, dict[str, str]] = (-1.0, {})  # (reused until, the auth headers)
        self._pool: urllib3.HTTPConnectionPool | None = None  # the API server's, made at the first call
        self.fence: threading.Event | None = None  # set: no more writes through this client (see fenced)

    @classmethod
    def connect(cls, kubeconfig: str | None = None, qps: float = 50.0, burst: int = 100,
                host: str | None = None, context: str | None = None, connections: int = 32) -> "KubeClient":
        """From `kubeconfig` if given, else in-cluster, else ~/.kube/config (its `context`, or
        the current one); `host` overrides the server address (vcctl's --master) and needs no
        kubeconfig at all: without one it is reached with no credentials. `connections`: how
        many kept-alive connections the pool holds (one per thread that calls at once; a
        watch holds one while it runs), beyond which each call opens and drops its own."""
        configuration = client.Configuration()
        where = f"--kubeconfig {kubeconfig}" if kubeconfig else "kubeconfig (in-cluster, then ~/.kube/config)"
        if kubeconfig and not os.path.exists(kubeconfig):
            raise InputError(f"--kubeconfig {kubeconfig}", "no such file")
        try:
            if kubeconfig or context:
                config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
            else:
                try:
                    config.load_incluster_config(client_configuration=configuration)
                except config.ConfigException:
                    config.load_kube_config(client_configuration=configuration)
        except (config.ConfigException, OSError, ValueError, yaml.YAMLError) as err:
            if not (host and not kubeconfig and not context):
                raise InputError(where, "cannot configure the Kubernetes client: " + " ".join(str(err).split())) from None
            configuration = client.Configuration()  # --master alone: that address, no credentials
        if host:
            configuration.host = host
            refresh = configuration.refresh_api_key_hook  # re-applies the kubeconfig's server
            if refresh is not None:
                def keep_host(conf: client.Configuration) -> None:
                    refresh(conf)
                    conf.host = host
                configuration.refresh_api_key_hook = keep_host
        configuration.connection_pool_maxsize = connections
        return cls(client.ApiClient(configuration), qps, burst)

    @staticmethod
    def default_namespace(kubeconfig: str | None = None, context: str | None = None) -> str:
        """The namespace kubectl would use: the context's, else the pod's own (in-cluster),
        else "default"."""
        try:
            contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
            chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
            namespace = ((chosen or {}).get("context") or {}).get("namespace")
            if namespace:
                return str(namespace)
        except (config.ConfigException, OSError, ValueError, yaml.YAMLError):
            pass
        try:
            with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
                return f.read().strip() or "default"
        except OSError:
            return "default"

    def fork(self) -> "KubeClient":
        """The same connection with a rate limiter of its own, for calls that must not queue
        behind bulk work (the leader's Lease renewals; Volcano builds a separate client too)."""
        return KubeClient(self.api, self.limiter.qps, self.limiter.burst)

    def fenced(self) -> "KubeClient":
        """The same connection and rate limiter, with a `fence` of its own: once it is set, every
        write through this client fails at once (ApiError code 0, reason Fenced) and reads go on.
        A leader's components write through one for its term; losing the Lease sets the fence,
        so nothing more of that term reaches the API server, as if the process had exited."""
        other = KubeClient.__new__(KubeClient)
        other.__dict__.update(self.__dict__)
        other.fence = threading.Event()
        return other

    def _auth(self) -> dict[str, str]:
        """The auth headers, from the ApiClient's hooks (they re-read a rotated or expired
        token) at most every `AUTH_REUSE` seconds: asking them costs more CPU than a bind."""
        until, headers = self._token
        now = time.monotonic()
        if now >= until:
            headers = {}
            self.api.update_params_for_auth(headers, [], ["BearerToken"], "", "GET", None)
            self._token = (now + AUTH_REUSE, headers)
        return headers

    def _call(self, method: str, url: str, query: dict[str, Any] | None, body: Any,
              content_type: str | None, timeout: float | tuple[float, float]) -> urllib3.BaseHTTPResponse:
        """One request on the API server's kept-alive connection pool; the response unread.

        The ApiClient's hooks give the auth headers (`_auth`), but the request goes to the
        host's urllib3 pool directly: the generated client's layers (request wrapping, body
        sniffing, response wrapping, re-applying the kubeconfig) cost more CPU than the HTTP
        exchange itself, and a scheduler's binds are bounded by exactly that CPU."""
        if self.fence is not None and method != "GET" and self.fence.is_set():
            raise ApiError(0, "Fenced", f"{method} {url}: this replica lost its lease and writes no more")
        self.limiter.acquire()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
            if not isinstance(body, (str, bytes)):
                body = json.dumps(body, separators=(",", ":"))
        headers.update(self.api.default_headers)
        headers.update(self._auth())
        target = self._prefix + url
        pairs = [(k, v) for k, v in (query or {}).items() if v is not None]
        if pairs:  # encoded as the generated client does
            target += "?" + "&".join(f"{k}={quote(str(v).lower() if isinstance(v, bool) else str(v))}" for k, v in pairs)
        if isinstance(timeout, tuple):
            limits = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        else:
            limits = urllib3.Timeout(total=timeout)
        try:
            pool = self._pool
            if pool is None:
                pool = self._pool = self.api.rest_client.pool_manager.connection_from_url(self._base)
            response = pool.urlopen(method, target, body=body, headers=headers, preload_content=False, timeout=limits)
        except urllib3.exceptions.HTTPError as err:  # no answer at all (refused, reset, TLS): code 0
            raise ApiError(0, type(err).__name__, str(err)) from None
        if not 200 <= response.status < 300:
            data = response.read()
            response.release_conn()
            raise _error(response.status, data)
        return response

    def request(self, method: str, url: str, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        response = self._call(method, url, query, body, content_type, timeout)
        try:
            data = response.read()
        finally:
            response.release_conn()
        return orjson.loads(data) if data else {}

    def stream(self, url: str, query: dict[str, Any], timeout: float) -> "WatchStream":
        """A watch: iterate for one decoded event per line until the server ends the stream."""
        return WatchStream(self._call("GET", url, dict(query, watch="true"), None, None, (10.0, timeout)))

    # --- the few verbs everything uses -------------------------------------------------------

    def get(self, url: str) -> dict[str, Any]:
        return self.request("GET", url)

    def get_or_none(self, url: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", url)
        except ApiError as err:
            if err.code == 404:
                return None
            raise

    def create(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", url, body=body)

    def merge_patch(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", url, body=body, content_type="application/merge-patch+json")

    def delete(self, url: str) -> dict[str, Any]:
        return self.request("DELETE", url)


class WatchStream:
    """The events of one watch response; `close()` from another thread ends the iteration."""

    def __init__(self, raw: Any):
        self.raw = raw

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        try:
            for chunk in self.raw.stream(amt=None, decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line:  # orjson: a watch decodes every event of the resource, 2.5x faster
                        yield orjson.loads(line)
        finally:
            self.raw.release_conn()

    def close(self) -> None:
        try:
            self.raw.shutdown()
        except (AttributeError, OSError):
            self.raw.close()


def _error(status: int, data: bytes) -> ApiError:
    try:
        body = orjson.loads(data)
        return ApiError(status, body.get("reason") or "Error", body.get("message") or "")
    except (ValueError, AttributeError):
        return ApiError(status, "Error", data.decode(errors="replace")[:200])
