"""`caldera webhook`: the HTTPS admission webhook around the pure functions of central.admission.

Routes follow Volcano's (`/jobs/mutate`, `/jobs/validate`, `/queues/...`, `/podgroups/...`,
`/hypernodes/validate`, `/cronjobs/validate`, `/jobflows/validate`, `/pods/validate` for the pods of Caldera's
scheduler and any pod pinning CPUs, `/owners/validate` for what the controllers create, see
central.admission.owners); each answers an admission.k8s.io/v1 AdmissionReview. Mutating routes
return the defaulting as a JSONPatch; validating routes run the same `admit` (defaults first, then every rule) that
`caldera validate` runs, so a bad object is refused with the same field-path messages
everywhere. Queue DELETE requests go through `admit_delete`.

The existing objects a decision needs (queues, PodGroups, namespaces) come from reflectors;
until they have synced the webhook refuses (and `/healthz` says not ready), which with
`failurePolicy: Fail` is the safe side. TLS: 1.2 or newer, the certificate re-read when its
files change (a renewed Secret), handshakes in the request threads so a slow client cannot
stall the accept loop. At most `MAX_CONNECTIONS` connections are served at once (more are
closed at accept) and each request, handshake included, must be done within
`REQUEST_DEADLINE_S` (its connection is cut then): a per-read timeout alone let a client
trickling a byte at a time hold a thread for as long as it liked. Its own webhook configurations are kept current by
`central.admission.webhookconfig`.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import logging
import os
import signal
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import urlsplit

from central.admission import DEFAULT_CONFIG, AdmissionConfig, Cluster, admit, admit_delete, json_patch
from central.admission.authorizer import NODE_NAME_CLAIM, review_access
from central.admission.cluster import DEFAULT_QUEUE, podgroup_queue
from central.admission.config import add_job_limit_arguments
from central.admission.metrics import WebhookMetrics
from central.admission.owners import CONTROLLERS_USER, OwnerCache, OwnerUnreadable, review_owner
from central.admission.pods import concerns, mutate_pod
from central.admission.resourcegroups import ResourceGroupsFile
from central.admission.webhookconfig import CaBundleInjector
from central.certs.command import WEBHOOK_CONFIGURATIONS
from central.certs.issue import KeyPair, certificate_problem
from central.errors import InputError
from central.kube.client import CORE, VOLCANO_SCHEDULING, ApiError, KubeClient, path
from central.kube.informer import Reflector
from central.model.fields import check_tree, is_object_name, map_at
from central.model.schedulinggate import parse_feature_gates
from central.scheduler.metrics import BoundedHTTPServer, serve

log = logging.getLogger(__name__)

ROUTES = {f"/{resource}/{verb}" for resource in ("jobs", "queues", "podgroups") for verb in ("mutate", "validate")}
ROUTES.update(("/pods/validate", "/pods/mutate", "/hypernodes/validate", "/cronjobs/validate", "/jobflows/validate"))
EVICTION_ROUTE = "/pods/eviction/validate"  # only the agents' evictions reach it (matchConditions)
OWNERS_ROUTE = "/owners/validate"  # only the controllers' creates reach it (matchConditions)
AUTHORIZE_ROUTE = "/authorize/agent-pods"  # the API server's authorization webhook (SubjectAccessReviews)
MAX_BODY = 3 * 1024 * 1024  # etcd's request limit is 1.5 MiB; an AdmissionReview carries two copies
MAX_CONNECTIONS = 128  # open connections served at once (a thread each); more are closed at accept
IO_TIMEOUT_S = 15.0  # seconds a client may take per read or write, the TLS handshake included
REQUEST_DEADLINE_S = 30.0  # one request, from its first byte awaited to its answer sent (the API server gives up after 10 s)


class ClusterView:
    """The objects admission decides against, kept current by reflectors.

    Each event updates the view in place (a queue, a namespace, one PodGroup's place in its
    queue's count); a request copies only the queues, so its cost does not grow with the
    number of PodGroups in the cluster."""

    def __init__(self, client: KubeClient | None):
        self._lock = threading.Lock()
        self.queues: dict[str, dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self._podgroup_queue: dict[str, str] = {}  # PodGroup key -> its queue
        self._counts: dict[str, int] = {}  # queue -> PodGroups
        self._cluster: Cluster | None = None
        self._client = client
        self.reflectors = [] if client is None else [  # None: events come through `apply` (tests)
            Reflector(client, path(VOLCANO_SCHEDULING, "queues"), self._on("Queue")),
            Reflector(client, path(VOLCANO_SCHEDULING, "podgroups"), self._on("PodGroup")),
            Reflector(client, path(CORE, "namespaces"), self._on("Namespace"))]

    def _on(self, kind: str) -> Callable[[str, dict[str, Any]], None]:
        def handle(event: str, obj: dict[str, Any]) -> None:
            with self._lock:
                self.apply(kind, event, obj)
        return handle

    def apply(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        self._cluster = None
        if kind in ("Queue", "Namespace"):
            table = self.queues if kind == "Queue" else self.namespaces
            table.pop(name, None)
            if event != "DELETED":
                table[name] = dict(obj, kind=kind)
        else:
            key = f"{meta.get('namespace')}/{name}"
            before = self._podgroup_queue.pop(key, None)
            if before is not None:
                self._counts[before] -= 1
            if event != "DELETED":
                queue = podgroup_queue(dict(obj, kind=kind)) or DEFAULT_QUEUE
                self._podgroup_queue[key] = queue
                self._counts[queue] = self._counts.get(queue, 0) + 1

    def start(self) -> "ClusterView":
        for reflector in self.reflectors:
            reflector.start()
        return self

    def stop(self) -> None:
        for reflector in self.reflectors:
            reflector.stop()

    def synced(self) -> bool:
        return all(r.synced.is_set() for r in self.reflectors)

    def cluster(self, queue: Any = None) -> Cluster:
        """The view as a Cluster, rebuilt only after something changed (O(queues)). A `queue`
        the request names that the watch has not delivered yet is read from the apiserver once:
        a queue created just before its first job must not refuse that job."""
        # only a valid name goes into the URL: a tenant's `../..` must not read other objects
        if is_object_name(queue) and self._client is not None and queue not in self.queues:
            try:
                found = self._client.get_or_none(path(VOLCANO_SCHEDULING, "queues", name=queue))
            except ApiError as err:  # the view decides alone, as before
                log.warning("could not read queue %s the watch has not delivered: %s", queue, err)
                found = None
            if found is not None:
                with self._lock:
                    if queue not in self.queues:  # the watch may have caught up meanwhile
                        self.apply("Queue", "ADDED", found)
        with self._lock:
            if self._cluster is None:
                self._cluster = Cluster(dict(self.queues), dict(self._counts), dict(self.namespaces))
            return self._cluster


def review(route: str, request: dict[str, Any], view: ClusterView, config: AdmissionConfig) -> dict[str, Any]:
    """The AdmissionReview response for one request. A malformed object is a denial naming the
    field (admission is total); only a bug in Caldera reaches the handler's 500."""
    uid = request.get("uid", "")
    if not view.synced():
        return _deny(uid, 503, "admission is starting: its caches have not synced yet")
    obj = request.get("object") or {}
    old = request.get("oldObject") or None
    if not isinstance(obj, dict) or old is not None and not isinstance(old, dict):
        return _deny(uid, 400, "object: expected a Kubernetes object")
    try:
        check_tree(request, "request")
    except InputError as err:
        return _deny(uid, 400, err.message)
    if route == "/pods/mutate":  # the queue-allocation gate, whatever the pod's scheduler (Volcano's rule)
        return _mutated(uid, obj, mutate_pod(obj, config, str(request.get("namespace") or ""))
                        if request.get("operation") == "CREATE" else obj)
    if route.startswith("/pods/") and not concerns(obj, config, old):
        return {"uid": uid, "allowed": True}  # another scheduler's pod, pinning nothing
    cluster = view.cluster(_named_queue(obj))
    user_info = map_at(request, "userInfo")
    if request.get("operation") == "DELETE":
        decision = admit_delete(old or {}, cluster, config)
    else:
        decision = admit(obj, cluster, config, old if request.get("operation") == "UPDATE" else None,
                         user=user_info.get("username"))
    if route.endswith("/mutate"):
        return _mutated(uid, obj, decision.object if request.get("operation") == "CREATE" else obj)
    if decision.allowed:
        return {"uid": uid, "allowed": True}
    return _deny(uid, 400, "; ".join(decision.errors))


def _mutated(uid: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """A mutating route's answer: allowed, with the JSONPatch from `before` to `after`, if any."""
    patch = json_patch(before, after)
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
    return response


def _named_queue(obj: dict[str, Any]) -> Any:
    """The queue a Job or PodGroup goes to, or a Queue's parent: what admission looks up."""
    spec = map_at(obj, "spec")
    return spec.get("parent") if obj.get("kind") == "Queue" else spec.get("queue")


def review_agent_eviction(request: dict[str, Any], pod: dict[str, Any] | None) -> dict[str, Any]:
    """An agent may evict only pods on its own node: the node its token is bound to (a
    ValidatingAdmissionPolicy cannot decide this, it sees the Eviction and not the pod)."""
    uid = request.get("uid", "")
    nodes = ((request.get("userInfo") or {}).get("extra") or {}).get(NODE_NAME_CLAIM) or []
    target = f"{request.get('namespace')}/{request.get('name')}"
    if len(nodes) != 1:
        return _deny(uid, 403, f"an eviction of {target} by a token bound to no node")
    if pod is None:
        return {"uid": uid, "allowed": True}  # gone already: the eviction answers 404 itself
    on = (pod.get("spec") or {}).get("nodeName") or ""
    if on != nodes[0]:
        return _deny(uid, 403, f"the agent of node {nodes[0]} may not evict {target}, which runs on {on or 'no node'}")
    return {"uid": uid, "allowed": True}


def _deny(uid: str, code: int, message: str) -> dict[str, Any]:
    reason = {400: "Invalid", 403: "Forbidden"}.get(code, "ServiceUnavailable")
    return {"uid": uid, "allowed": False, "status": {"code": code, "message": message, "reason": reason}}


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class TLSContext:
    """An SSL context for the certificate files, rebuilt when they change.

    Never fatal: a missing, unreadable or expired certificate is `problem` (logged once per
    new problem, shown by /readyz) and the last good context keeps serving until it expires;
    `caldera certs` or cert-manager renewing the Secret mends it without a restart."""

    def __init__(self, cert: str, key: str, clock: Callable[[], dt.datetime] = _utcnow, client_ca: str = ""):
        self.cert, self.key, self.clock = cert, key, clock
        self.client_ca = client_ca  # set: a client must present a certificate this CA signed (the API server's)
        self.problem: str | None = None
        self._stamp: tuple[float, float, float] | None = None
        self._context: ssl.SSLContext | None = None
        self._expires: dt.datetime | None = None
        self._lock = threading.Lock()
        self.current()

    def current(self) -> ssl.SSLContext | None:
        """The context to serve with (None until a usable certificate has been read)."""
        with self._lock:
            try:
                stamp = (os.stat(self.cert).st_mtime, os.stat(self.key).st_mtime,
                         os.stat(self.client_ca).st_mtime if self.client_ca else 0.0)
                if stamp != self._stamp:
                    self._stamp = stamp
                    self._load()
            except OSError as err:
                self._report(f"cannot read {err.filename}: {err.strerror}")
            if self._expires is not None and self.clock() >= self._expires:
                self._report(f"{self.cert} expired {self._expires:%Y-%m-%d %H:%M} UTC")
                self._context = None
            return self._context

    def _load(self) -> None:
        with open(self.cert, "rb") as c, open(self.key, "rb") as k:
            pair = KeyPair(c.read(), k.read())
        problem = certificate_problem(pair, self.clock())
        if problem:
            return self._report(f"{self.cert}: {problem}")  # a half-written renewal: keep the old one
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert, self.key)
            if self.client_ca:  # TLS client authentication: no certificate, no handshake
                context.load_verify_locations(cafile=self.client_ca)
                context.verify_mode = ssl.CERT_REQUIRED
        except ssl.SSLError as err:
            return self._report(f"{self.cert} or {self.client_ca}: {err}")
        self._context, self._expires = context, pair.cert.not_valid_after_utc
        if self.problem:
            log.info("serving certificate %s loaded, valid until %s", self.cert, f"{self._expires:%Y-%m-%d}")
        self.problem = None

    def _report(self, problem: str) -> None:
        if problem != self.problem:
            log.error("cannot serve TLS: %s", problem)
        self.problem = problem


class Deadlines:
    """Connections cut when a request runs past its deadline: the per-read timeout alone lets a
    client that sends a byte every few seconds hold a thread for ever. One watchdog thread for
    all connections (a timer per request would be a thread per request)."""

    def __init__(self, period_s: float = 0.5):
        self._lock = threading.Lock()
        self._due: dict[socket.socket, float] = {}
        threading.Thread(target=self._watch, args=(period_s,), name="webhook-deadlines", daemon=True).start()

    def start(self, conn: socket.socket, seconds: float) -> None:
        with self._lock:
            self._due[conn] = time.monotonic() + seconds

    def done(self, conn: socket.socket) -> None:
        with self._lock:
            self._due.pop(conn, None)

    def _watch(self, period_s: float) -> None:
        while True:
            time.sleep(period_s)
            now = time.monotonic()
            with self._lock:
                late = [conn for conn, due in self._due.items() if due <= now]
                for conn in late:
                    del self._due[conn]
            for conn in late:
                try:
                    conn.shutdown(socket.SHUT_RDWR)  # the handler's blocked read fails, its thread ends
                except OSError:
                    pass


class WebhookServer(BoundedHTTPServer):
    """The shared bounded server (a thread per connection up to `max_connections`, the rest
    closed at accept so the API server retries on another; every read timed out) with TLS and
    a deadline on each whole request."""

    def __init__(self, address: tuple[str, int], tls: TLSContext, view: ClusterView, config: AdmissionConfig,
                 client: KubeClient | None = None, metrics: WebhookMetrics | None = None,
                 max_connections: int = MAX_CONNECTIONS, request_deadline_s: float = REQUEST_DEADLINE_S,
                 controllers_user: str = CONTROLLERS_USER):
        self.tls, self.view, self.config, self.client = tls, view, config, client
        self.controllers_user = controllers_user
        self.owners = OwnerCache(self._get)
        self.metrics = metrics or WebhookMetrics()
        self.request_deadline_s = request_deadline_s
        self.deadlines = Deadlines()
        super().__init__(address, _Handler, max_connections=max_connections, io_timeout_s=IO_TIMEOUT_S)

    def _get(self, url: str) -> dict[str, Any] | None:
        if self.client is None:
            raise OwnerUnreadable("no API client")
        try:
            return self.client.get_or_none(url)
        except (ApiError, OSError) as err:
            raise OwnerUnreadable(str(err)) from None

    def on_refused(self) -> None:
        if self.refused in (1, 10, 100) or self.refused % 1000 == 0:
            log.warning("%d connection(s) refused: all %d slots busy", self.refused, self.max_connections)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.info("connection from %s failed", client_address[0], exc_info=True)  # e.g. a bad TLS handshake

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()  # timed out per read, the handshake included
        context = self.tls.current()
        if context is None:  # no usable certificate: refuse the connection, /readyz says why
            sock.close()
            raise OSError("no usable serving certificate")
        return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


class _Handler(BaseHTTPRequestHandler):
    server: WebhookServer
    timeout = IO_TIMEOUT_S  # per read, as the server's; an idle kept-alive connection is closed
    # after it, and the API server opens another
    protocol_version = "HTTP/1.1"  # kept alive: a TLS handshake per admission call cost more than the call
    # An answer leaves in one write, flushed after each request: with the headers and the body
    # in two writes, Nagle's algorithm can hold the body until the API server (delayed) ACKs
    # the headers, on any admission call of a kept-alive connection.
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, *_: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.deadlines.start(self.connection, self.server.request_deadline_s)  # the handshake too
        self.connection.do_handshake()

    def handle_one_request(self) -> None:
        """One request within the server's deadline, from the wait for its first line (an idle
        kept-alive connection is closed after `timeout` anyway) to its answer."""
        self.server.deadlines.start(self.connection, self.server.request_deadline_s)
        try:
            super().handle_one_request()
        finally:
            self.server.deadlines.done(self.connection)

    def finish(self) -> None:
        self.server.deadlines.done(self.connection)
        super().finish()

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/healthz":
            ready = self.server.view.synced()
            self._send(200 if ready else 503, {"status": "ok" if ready else "caches not synced"})
        else:
            self._send(404, {"message": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        route = urlsplit(self.path).path  # the apiserver appends ?timeout=10s
        if route == AUTHORIZE_ROUTE and 0 < length <= MAX_BODY:
            return self._authorize(length)
        known = route in ROUTES or route in (EVICTION_ROUTE, OWNERS_ROUTE)
        if not known or not 0 < length <= MAX_BODY:
            self.close_connection = True  # the body stays unread: the connection cannot carry another request
            if not known:
                return self._send(404, {"message": f"no admission route {route}"})
            return self._send(413, {"message": "request body missing or too large"})
        try:
            body = json.loads(self.rfile.read(length))
            request = body["request"]
            if not isinstance(request, dict):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            return self._send(400, {"message": "expected an admission.k8s.io/v1 AdmissionReview"})
        started = time.monotonic()
        try:
            if route == EVICTION_ROUTE:
                response = review_agent_eviction(request, self._pod(request))
            elif route == OWNERS_ROUTE:
                response = review_owner(request, self.server.owners, self.server.controllers_user)
            else:
                response = review(route, request, self.server.view, self.server.config)
        except ApiError as err:
            response = _deny(request.get("uid", ""), 503, f"cannot read the pod to evict: {err}")
        except Exception:  # a bug must answer (and be logged), not hang the API server's call
            log.exception("admission %s failed", route)
            response = _deny(request.get("uid", ""), 500, "internal error in the admission webhook")
        self.server.metrics.observe(route, request.get("operation"), response, time.monotonic() - started)
        self._send(200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    def _authorize(self, length: int) -> None:
        try:
            sar = json.loads(self.rfile.read(length))
            if not isinstance(sar, dict) or sar.get("kind") != "SubjectAccessReview":
                raise TypeError
            answer = review_access(sar)
        except (ValueError, TypeError, AttributeError, RecursionError):
            return self._send(400, {"message": "expected an authorization.k8s.io/v1 SubjectAccessReview"})
        self._send(200, answer)

    def _pod(self, request: dict[str, Any]) -> dict[str, Any] | None:
        if self.server.client is None:
            raise ApiError(503, "ServiceUnavailable", "no API client")
        return self.server.client.get_or_none(path(CORE, "pods", request.get("namespace"), request.get("name")))

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--bind-address", default="0.0.0.0", help="address the HTTPS and health ports listen on")
    parser.add_argument("--port", type=int, default=8443, help="HTTPS port of the webhook")
    parser.add_argument("--health-port", type=int, default=0,
                        help="plain HTTP /healthz (alive), /readyz (certificate usable, caches synced, "
                             "caBundle filled in) and /metrics; off when 0")
    parser.add_argument("--tls-cert-file", required=True, help="the serving certificate (PEM)")
    parser.add_argument("--tls-key-file", required=True, help="its private key (PEM)")
    parser.add_argument("--client-ca-file", default="",
                        help="require a client certificate signed by this CA (PEM) on the HTTPS port, for the "
                             "admission and authorization calls alike: the API server's own (its "
                             "--admission-control-config-file and authorization kubeconfig present it); off when empty")
    parser.add_argument("--ca-bundle-file", default="",
                        help="fill this CA into the webhook configurations' caBundle at start and when it changes")
    parser.add_argument("--mutating-configuration", default=WEBHOOK_CONFIGURATIONS["mutatingwebhookconfigurations"],
                        help="MutatingWebhookConfiguration whose caBundle is kept filled in")
    parser.add_argument("--validating-configuration",
                        default=WEBHOOK_CONFIGURATIONS["validatingwebhookconfigurations"],
                        help="ValidatingWebhookConfiguration whose caBundle is kept filled in")
    parser.add_argument("--webhook-url", default="",
                        help="with --ca-bundle-file: point clientConfig at this URL (plus each route) instead of "
                             "the Service, for a webhook running outside the cluster, e.g. https://127.0.0.1:8443")
    parser.add_argument("--scheduler-name", default=DEFAULT_CONFIG.scheduler_name,
                        help="the schedulerName Jobs get by default, whose pods are checked (with --ca-bundle-file, "
                             "written into the pods webhook's matchCondition)")
    add_job_limit_arguments(parser)  # the controllers take the same flags, and must get the same values
    parser.add_argument("--max-queue-depth", type=int, default=DEFAULT_CONFIG.max_queue_depth, help="queue hierarchy depth")
    parser.add_argument("--enable-queue-allocated-pods-check", action="store_true",
                        help="refuse deleting a queue that has allocated pods (Volcano's flag of that name)")
    parser.add_argument("--feature-gates", default="",
                        help="Volcano's feature gates, Name=bool,...; SchedulingGatesQueueAdmission=true gives pods "
                             "annotated scheduling.volcano.sh/queue-allocation-gate: \"true\" that scheduling gate")
    parser.add_argument("--admission-conf", default="",
                        help="Volcano's admission configuration file (resourceGroups: pods placed by namespace or "
                             "annotation); read again when it changes")
    parser.add_argument("--scheduler-user", default=DEFAULT_CONFIG.scheduler_user,
                        help="the only user that may set caldera.sh/cpuset on pods (the scheduler's ServiceAccount)")
    parser.add_argument("--controllers-user", default=CONTROLLERS_USER,
                        help="the controllers' ServiceAccount, whose creates on " + OWNERS_ROUTE +
                             " must name an existing owner")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        groups = ResourceGroupsFile(args.admission_conf) if args.admission_conf else None
    except (OSError, UnicodeDecodeError, InputError) as err:
        log.error("--admission-conf %s: %s", args.admission_conf, getattr(err, "strerror", None) or err)
        return 2
    config = AdmissionConfig(max_tasks_per_job=args.max_tasks_per_job, max_replicas_per_task=args.max_replicas_per_task,
                             max_replicas_per_job=args.max_replicas_per_job, max_queue_depth=args.max_queue_depth,
                             scheduler_name=args.scheduler_name, scheduler_user=args.scheduler_user,
                             queue_allocated_pods_check=args.enable_queue_allocated_pods_check,
                             features=parse_feature_gates(args.feature_gates),
                             resource_groups=groups)
    tls = TLSContext(args.tls_cert_file, args.tls_key_file, client_ca=args.client_ca_file)
    client = KubeClient.connect(args.kubeconfig)
    view = ClusterView(client).start()
    injector = None
    if args.ca_bundle_file:
        injector = CaBundleInjector(client, args.ca_bundle_file, {
            "mutatingwebhookconfigurations": args.mutating_configuration,
            "validatingwebhookconfigurations": args.validating_configuration}, args.webhook_url,
            scheduler_name=args.scheduler_name).start()
    def ready() -> bool:
        tls.current()
        return tls.problem is None and view.synced() and (injector is None or injector.problem is None)

    health = None
    metrics = WebhookMetrics()
    metrics.ready.set_function(lambda: 1.0 if ready() else 0.0)
    if args.health_port:  # /metrics (requests, latency, denials, readiness) beside the probes
        health = serve(metrics.registry, args.health_port, ready, host=args.bind_address)
    server = WebhookServer((args.bind_address, args.port), tls, view, config, client, metrics,
                           controllers_user=args.controllers_user)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    try:
        server.serve_forever()
    finally:
        view.stop()
        if injector:
            injector.stop()
        if health:
            health.shutdown()
        server.server_close()
    return 0
