"""A real-HTTP Kubernetes API stand-in for tests: the official client talks to it over loopback.

kmock 0.8 (see shared/reference/kmock.md) lacks resourceVersions, selectors, PUT, binding,
eviction and watch resume, and fixing them means overriding its private hooks. This server is
the smaller honest alternative: the store in `apistore.py` behind `http.server`, speaking the
API's URLs, verbs, status codes and Status bodies, and watches as the apiserver streams them:
replay of the retained event log strictly after `resourceVersion`, then new events (chunked),
the stream ended at `timeoutSeconds`, 410 Gone (an ERROR event) for compacted versions, and
selector transitions (a bound pod leaves a `spec.nodeName=` watch as DELETED).
`close_watches()` ends every open stream; `access` records (group, resource, verb) for RBAC.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.kube.apistore import CUSTOM, RESOURCES, ROUTES, ApiError, Store, json_patch, matches, merge_patch

def _status_for(resource: str, has_status: bool, subresource: str | None) -> bool | None:
    if not has_status:
        return None
    return subresource == "status"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store: Store  # set on the subclass the server builds

    def log_message(self, *_: Any) -> None:  # quiet
        pass

    # --- plumbing ---------------------------------------------------------------------------

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else {}

    def _route(self) -> tuple[str, str, str | None, str | None, dict[str, str]]:
        """(resource, namespace, name, subresource, query) from the URL."""
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        group = "" if parts[:1] == ["api"] else parts[1]
        parts = parts[2:] if parts[:1] == ["api"] else parts[3:]  # drop api/v1 or apis/group/version
        namespace = ""
        if parts[:1] == ["namespaces"] and len(parts) >= 3:
            namespace, parts = parts[1], parts[2:]
        resource = ROUTES.get((group, parts[0] if parts else ""))
        if resource is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource {resource!r}")
        name, sub = (parts[1:3] + [None, None])[:2]
        return resource, namespace, name, sub, query

    def _handle(self, method: str) -> None:
        try:
            resource, namespace, name, sub, query = self._route()
            if method == "GET" and name is None and query.get("watch") in ("true", "1"):
                return self._watch(resource, namespace, query)
            code, body = self._dispatch(method, resource, namespace, name, sub, query)
        except ApiError as err:
            code, body = err.code, err.status()
        except (ValueError, KeyError, IndexError, TypeError) as err:
            code, body = 400, ApiError(400, "BadRequest", f"bad request: {err}").status()
        self._send(code, body)

    do_GET = lambda self: self._handle("GET")  # noqa: E731
    do_POST = lambda self: self._handle("POST")  # noqa: E731
    do_PUT = lambda self: self._handle("PUT")  # noqa: E731
    do_PATCH = lambda self: self._handle("PATCH")  # noqa: E731
    do_DELETE = lambda self: self._handle("DELETE")  # noqa: E731

    # --- verbs ------------------------------------------------------------------------------

    def _dispatch(self, method: str, resource: str, namespace: str, name: str | None,
                  sub: str | None, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        store = self.store
        namespaced = RESOURCES[resource][2]
        key = (namespace if namespaced else "", name or "")
        body = self._body() if method in ("POST", "PUT", "PATCH") else None
        verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[method]
        if sub in ("binding", "eviction"):
            verb = "bind" if sub == "binding" else "evict"
        elif sub == "status" and verb in ("update", "patch"):
            if not RESOURCES[resource][3]:  # as the real apiserver: no such subresource
                raise ApiError(404, "NotFound", f"the server could not find the requested resource ({resource}/status)")
            verb = "status"
        group, plural = next(route for route, name in ROUTES.items() if name == resource)
        rbac_verb = {"bind": "create", "evict": "create",
                     "status": "update" if method == "PUT" else "patch"}.get(verb, verb)
        with store.lock:
            store.access.add((group, f"{plural}/{sub}" if sub else plural, rbac_verb))
            store.check_fault(verb, resource, "/".join(key))
            answer = self._apply(verb, method, resource, namespace, name, sub, query, body, key)
            store.check_late_fault(verb, resource)
            return answer

    def _apply(self, verb: str, method: str, resource: str, namespace: str, name: str | None, sub: str | None,
               query: dict[str, str], body: Any, key: tuple[str, str]) -> tuple[int, dict[str, Any]]:
        store = self.store
        api_version, kind, namespaced, has_status = RESOURCES[resource]
        if verb == "list":
            items = [copy.deepcopy(o) for (ns, _), o in store.objects[resource].items()
                     if (not namespace or ns == namespace)
                     and matches(o, query.get("labelSelector"), query.get("fieldSelector"))]
            return 200, {"apiVersion": api_version, "kind": f"{kind}List",
                         "metadata": {"resourceVersion": str(store.rv)}, "items": items}
        if verb == "get":
            obj = store.objects[resource].get(key)
            if obj is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found')
            return 200, copy.deepcopy(obj)
        if verb == "create":
            return 201, copy.deepcopy(store.create(resource, namespace, body))
        if verb == "bind":
            return 201, store.bind(key, body)
        if verb == "evict":
            return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                         "code": 201, "details": {"name": store.delete("pods", key)["metadata"]["name"]}}
        if verb == "delete":
            return 200, copy.deepcopy(store.delete(resource, key))
        status_only = _status_for(resource, has_status, sub)
        if verb == "patch" or verb == "status" and method == "PATCH":
            current = store.objects[resource].get(key)
            if current is None:
                raise ApiError(404, "NotFound", f'{resource} "{name}" not found')
            content_type = self.headers.get("Content-Type") or ""
            strategic = "strategic-merge-patch" in content_type
            if strategic and resource in CUSTOM:
                raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                               f"accepted media types include: application/json-patch+json, "
                               f"application/merge-patch+json, application/apply-patch+yaml")
            if "json-patch" in content_type:
                body = json_patch(current, body)
                body["metadata"]["resourceVersion"] = (body.get("metadata") or {}).get("resourceVersion")
                if body["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]:
                    del body["metadata"]["resourceVersion"]
            else:
                body = merge_patch(current | {"metadata": {k: v for k, v in current["metadata"].items()
                                                      if k != "resourceVersion"}}, body, strategic)
        return 200, copy.deepcopy(store.replace(resource, key, body, status_only))

    def _watch(self, resource: str, namespace: str, query: dict[str, str]) -> None:
        store = self.store
        labels, fields = query.get("labelSelector"), query.get("fieldSelector")
        timeout = float(query.get("timeoutSeconds") or 1800)
        with store.lock:
            group, plural = next(route for route, name in ROUTES.items() if name == resource)
            store.access.add((group, plural, "watch"))
            store.check_fault("watch", resource, namespace)
            generation = store.watch_generation  # with the count: close_watches() after it ends this one
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        pending: list[bytes] = []  # one chunk per batch of events, not a syscall per event

        def emit(kind: str, obj: dict[str, Any]) -> None:
            pending.append(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

        def send() -> None:
            data = b"".join(pending)
            pending.clear()
            if data:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def visible(obj: dict | None) -> bool:
            return obj is not None and (not namespace or obj["metadata"].get("namespace") == namespace) \
                and matches(obj, labels, fields)

        deadline = threading.Event()
        timer = threading.Timer(timeout, lambda: (deadline.set(), store.close_watches()))
        timer.start()
        try:
            with store.lock:
                since = query.get("resourceVersion") or "0"
                position = int(since)
                if position == 0:
                    for obj in list(store.objects[resource].values()):
                        if visible(obj):
                            emit("ADDED", obj)
                    position = store.rv
                    send()
                elif position < store.log_floor:
                    gone = ApiError(410, "Expired", f"too old resource version: {position} ({store.log_floor})")
                    emit("ERROR", gone.status())
                    send()
                    return
            while True:
                with store.lock:
                    while (not store.log or store.log[-1][0] <= position) and not store.stopping \
                            and generation == store.watch_generation and not deadline.is_set():
                        store.lock.wait()
                    if store.stopping or generation != store.watch_generation or deadline.is_set():
                        return
                    start = self._first_after(position)
                    batch = store.log[start:]
                    position = store.log[-1][0]
                for _, res, kind, old, new in batch:
                    if res != resource:
                        continue
                    was, now = visible(old), visible(new)
                    if kind == "DELETED":
                        if was:
                            emit("DELETED", new)
                    elif was and now:
                        emit(kind, new)
                    elif now:
                        emit("ADDED", new)
                    elif was:
                        emit("DELETED", new)
                send()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        finally:
            timer.cancel()
            try:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    def _first_after(self, position: int) -> int:
        log = self.store.log
        lo, hi = 0, len(log)
        while lo < hi:
            mid = (lo + hi) // 2
            if log[mid][0] <= position:
                lo = mid + 1
            else:
                hi = mid
        return lo


class ApiServer:
    """`with ApiServer() as api:` serves on 127.0.0.1; `api.url`, `api.store`, `api.kubeconfig(path)`."""

    def __init__(self) -> None:
        self.store = Store()
        handler = type("BoundHandler", (Handler,), {"store": self.store})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> "ApiServer":
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        with self.store.lock:
            self.store.stopping = True
            self.store.lock.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, path: str) -> str:
        """Write a kubeconfig pointing at this server; return its path."""
        import yaml

        with open(path, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "test",
                            "clusters": [{"name": "test", "cluster": {"server": self.url}}],
                            "users": [{"name": "test", "user": {"token": "test-token"}}],
                            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}, f)
        return path

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an object directly in the store (test set-up), resource picked from its kind."""
        resource = next(r for r, (av, kind, _, _) in RESOURCES.items()
                        if kind == obj["kind"] and av == obj.get("apiVersion", av))
        with self.store.lock:
            return copy.deepcopy(self.store.create(resource, obj["metadata"].get("namespace", ""), copy.deepcopy(obj)))
