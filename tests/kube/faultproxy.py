"""A fault-injection proxy in front of the real kube-apiserver, for what the real server does
not do on request: end every open watch now, answer the next watch with 410 Gone (as after a
compaction), answer N requests with an error status, add latency, hold chosen requests
until the test lets them go (a slow write held open for as long as the test needs). Everything else is passed
through unchanged to the real apiserver, which stays the judge of every answer.

It terminates TLS with a certificate from the cluster's CA and forwards over TLS. A request
carrying a bearer token is forwarded with that token (so RBAC applies to it); one without is
forwarded as the cluster admin, as a client certificate cannot be passed through. It counts
requests by (verb, resource) so tests can wait for "the second watch of pods".
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from central.localcluster import pki

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def classify(method: str, url: str) -> tuple[str, str]:
    """(verb, resource) as the apiserver's audit names them: ("watch", "pods"), ("create",
    "pods/binding"), ... The resource follows the group/version and the namespace, if any."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    rest = segments[2:] if segments[:1] == ["api"] else segments[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] if rest else ""
    named = len(rest) > 1
    if len(rest) > 2:
        resource += "/" + rest[2]
    if method == "GET":
        query = parse_qs(parts.query)
        verb = "watch" if query.get("watch", ["false"])[0] in ("true", "1") else ("get" if named else "list")
    else:
        verb = _VERBS.get(method, method.lower())
    return verb, resource


def namespace_of(url: str) -> str:
    """The namespace a request is in ("" for a cluster-scoped one)."""
    segments = [s for s in urlsplit(url).path.split("/") if s][:5]
    at = segments.index("namespaces") + 1 if "namespaces" in segments else len(segments)
    return segments[at] if at < len(segments) else ""


class FaultProxy:
    def __init__(self, upstream: str, ca: pki.Pair, admin: pki.Pair, workdir: Path):
        self.upstream = urlsplit(upstream)
        serving = pki.issue(ca, workdir, "faultproxy", "faultproxy", server=True, ips=("127.0.0.1",))
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(str(serving.cert), str(serving.key))
        self.admin_context = ssl.create_default_context(cafile=str(ca.cert))
        self.admin_context.load_cert_chain(str(admin.cert), str(admin.key))
        self.token_context = ssl.create_default_context(cafile=str(ca.cert))
        self.counts: Counter[tuple[str, str]] = Counter()
        self.namespaced: Counter[tuple[str, str, str]] = Counter()
        self.requests: list[tuple[str, str]] = []  # (verb, resource) in the order they arrived
        self.forbidden: list[str] = []  # "verb resource: message" of each RBAC 403 the apiserver answered
        self._failures: list[dict[str, Any]] = []
        self._gone: Counter[str] = Counter()
        self.latency = 0.0
        self._holds: dict[tuple[str, str], threading.Event] = {}  # (verb, resource) -> set when let go
        self._held: Counter[tuple[str, str]] = Counter()  # requests waiting at a hold now
        self._streams: dict[socket.socket, str] = {}  # open watch sockets -> resource
        self._lock = threading.Lock()
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket = self.server_context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        # plain HTTP on loopback, as `kubectl proxy` serves: for a client given only a server URL
        self.plain = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.plain.daemon_threads = True
        self.plain_url = f"http://127.0.0.1:{self.plain.server_address[1]}"
        threading.Thread(target=self.plain.serve_forever, daemon=True).start()

    # --- what tests ask for -----------------------------------------------------------------

    def fail(self, verb: str, resource: str, code: int = 500, times: int = 1, reason: str = "InternalError",
             after: bool = False, namespace: str | None = None) -> None:
        """Answer the next `times` (verb, resource) requests (in `namespace` if given) with
        `code`; with `after`, each is carried out first and only its reply is lost on the way back."""
        with self._lock:
            self._failures.append({"verb": verb, "resource": resource, "code": code, "left": times, "reason": reason,
                                   "after": after, "namespace": namespace})

    def hold(self, verb: str, resource: str) -> None:
        """Keep every (verb, resource) request from now on waiting here, not yet forwarded,
        until `release`."""
        with self._lock:
            self._holds[(verb, resource)] = threading.Event()

    def held(self, verb: str, resource: str) -> int:
        """Requests waiting at the hold now."""
        with self._lock:
            return self._held[(verb, resource)]

    def release(self) -> None:
        """Let every held request go on to the apiserver, and hold no more."""
        with self._lock:
            holds, self._holds = self._holds, {}
        for gate in holds.values():
            gate.set()

    def _wait_if_held(self, verb: str, resource: str) -> None:
        with self._lock:
            gate = self._holds.get((verb, resource))
            if gate is None:
                return
            self._held[(verb, resource)] += 1
        gate.wait()
        with self._lock:
            self._held[(verb, resource)] -= 1

    def clear_failures(self) -> None:
        with self._lock:
            self._failures.clear()

    def gone(self, resource: str, times: int = 1) -> None:
        """Answer the next watch of `resource` with a 410 Gone ERROR event, as after compaction."""
        with self._lock:
            self._gone[resource] += times

    def close_watches(self) -> None:
        """End every open watch stream now (the server's timeout, a load balancer, a restart)."""
        with self._lock:
            streams, self._streams = list(self._streams), {}
        for sock in streams:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def open_watches(self, resource: str) -> int:
        """Watches of `resource` streaming now (both ends of one count once)."""
        with self._lock:
            return sum(1 for r in self._streams.values() if r == resource) // 2

    def count(self, verb: str, resource: str, namespace: str | None = None) -> int:
        """Requests seen; with `namespace`, only those in it (a previous test's lingering thread
        may still be calling into its terminating namespace)."""
        with self._lock:
            if namespace is None:
                return self.counts[(verb, resource)]
            return self.namespaced[(verb, resource, namespace)]

    def kubeconfig(self, path: Path, ca: Path) -> Path:
        """A kubeconfig without credentials for the proxy: it forwards as the admin."""
        return _anonymous_kubeconfig(path, self.url, ca)

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()
            self._gone.clear()
            self.counts.clear()
            self.namespaced.clear()
            self.requests.clear()
            self.forbidden.clear()
            self.latency = 0.0
        self.release()

    def stop(self) -> None:
        self.release()
        self.close_watches()
        for server in (self.httpd, self.plain):
            server.shutdown()
            server.server_close()

    # --- the proxy's own decisions -----------------------------------------------------------

    def _injected(self, verb: str, resource: str, namespace: str) -> dict[str, Any] | None:
        with self._lock:
            self.counts[(verb, resource)] += 1
            self.namespaced[(verb, resource, namespace)] += 1
            self.requests.append((verb, resource))
            for failure in self._failures:
                if failure["left"] and failure["verb"] in (verb, "*") and failure["resource"] in (resource, "*") \
                        and failure["namespace"] in (namespace, None):
                    failure["left"] -= 1
                    return failure
            if verb == "watch" and self._gone[resource]:
                self._gone[resource] -= 1
                return {"gone": True}
        return None


def _anonymous_kubeconfig(path: Path, server: str, ca: Path) -> Path:
    """A kubeconfig with no credentials: the proxy forwards as the admin."""
    import yaml
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "proxy",
           "clusters": [{"name": "proxy", "cluster": {"server": server, "certificate-authority": str(ca)}}],
           "users": [{"name": "proxy", "user": {}}],
           "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FaultProxy

    def log_message(self, *_: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _send_json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _forward(self) -> None:
        proxy = self.owner
        verb, resource = classify(self.command, self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if proxy.latency:
            time.sleep(proxy.latency)
        proxy._wait_if_held(verb, resource)
        injected = proxy._injected(verb, resource, namespace_of(self.path))
        if injected and injected.get("gone"):
            event = {"type": "ERROR", "object": _status(410, "Expired", "too old resource version (injected)")}
            data = (json.dumps(event) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if injected and not injected["after"]:
            return self._send_json(injected["code"], _status(injected["code"], injected["reason"], "injected fault"))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        token = self.headers.get("Authorization", "").startswith("Bearer ")
        context = proxy.token_context if token else proxy.admin_context
        upstream = http.client.HTTPSConnection(proxy.upstream.hostname, proxy.upstream.port, context=context,
                                               timeout=330)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            if injected:  # carried out; the reply is lost
                answer.read()
                return self._send_json(injected["code"], _status(injected["code"], injected["reason"],
                                                                 "injected fault after the request was carried out"))
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            if verb != "watch" or answer.status != 200:
                data = answer.read()
                message = str(json.loads(data or b'{}').get('message')) if answer.status == 403 else ""
                # a namespace being deleted refuses new content with 403 too: not RBAC (an earlier
                # test's recorder may still be writing an Event there)
                if answer.status == 403 and "because it is being terminated" not in message:
                    with proxy._lock:
                        proxy.forbidden.append(f"{verb} {resource}: {message}")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with proxy._lock:
                proxy._streams[self.connection] = resource
                proxy._streams[upstream.sock] = resource
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            self.close_connection = True
        finally:
            with proxy._lock:
                proxy._streams.pop(self.connection, None)
                proxy._streams.pop(upstream.sock, None)
            upstream.close()

