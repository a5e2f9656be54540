"""A real-HTTP Kubernetes API stand-in for tests: the official client talks to it over loopback.

kmock 0.8 (see shared/reference/kmock.md) lacks resourceVersions, selectors, PUT, binding,
eviction and watch resume, and fixing them means overriding its private hooks. This server is
the smaller honest alternative: one in-memory store behind `http.server`, with the apiserver
semantics the adapter relies on:

- a global resourceVersion counter; uid, creationTimestamp, generation; 201 on create,
  generateName, 409 AlreadyExists;
- list with labelSelector (=, ==, !=, exists, !exists) and fieldSelector (dotted paths, =, !=);
- watch from a resourceVersion: replays the retained event log strictly after it, then streams
  new events (chunked), ends at timeoutSeconds, and answers 410 Gone (an ERROR event, as the
  apiserver does) for versions older than the log; selector transitions (a bound pod leaves a
  `spec.nodeName=` watch as DELETED);
- PUT and PATCH (merge and json-patch) with a resourceVersion precondition (409 Conflict);
  the status subresource isolated from the main resource;
- pods/binding (sets spec.nodeName, 409 if already bound) and pods/eviction (deletes);
- fault injection: `fail(verb, resource, times, code)` answers the next matching requests
  with an error; `compact()` forgets the event log; `close_watches()` ends every open stream.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections import defaultdict
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# resource -> (group/version, kind, namespaced, has status subresource)
RESOURCES: dict[str, tuple[str, str, bool, bool]] = {
    "pods": ("v1", "Pod", True, True),
    "nodes": ("v1", "Node", False, True),
    "namespaces": ("v1", "Namespace", False, True),
    "events": ("v1", "Event", True, False),
    "services": ("v1", "Service", True, True),
    "configmaps": ("v1", "ConfigMap", True, False),
    "secrets": ("v1", "Secret", True, False),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClass", False, False),
    "leases": ("coordination.k8s.io/v1", "Lease", True, False),
    "jobs": ("batch/v1", "Job", True, True),
    "replicasets": ("apps/v1", "ReplicaSet", True, True),
    "statefulsets": ("apps/v1", "StatefulSet", True, True),
    "deployments": ("apps/v1", "Deployment", True, True),
    "networkpolicies": ("networking.k8s.io/v1", "NetworkPolicy", True, False),
    "queues": ("scheduling.volcano.sh/v1beta1", "Queue", False, True),
    "podgroups": ("scheduling.volcano.sh/v1beta1", "PodGroup", True, True),
    "vcjobs": ("batch.volcano.sh/v1alpha1", "Job", True, True),
    "commands": ("bus.volcano.sh/v1alpha1", "Command", True, False),
}

# (API group, plural in the URL) -> resource name above; vcjobs and batch/v1 jobs share a plural
ROUTES = {(av.rpartition("/")[0], {"vcjobs": "jobs"}.get(name, name)): name
          for name, (av, _, _, _) in RESOURCES.items()}


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


def _get_path(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _matches(obj: dict[str, Any], labels: str | None, fields: str | None) -> bool:
    have = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in (labels or "").split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if have.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if have.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in have:
                return False
        elif term not in have:
            return False
    for term in filter(None, (t.strip() for t in (fields or "").split(","))):
        negate = "!=" in term
        key, value = term.split("!=" if negate else "=", 1)
        key = key.rstrip("=")
        actual = _get_path(obj, key)
        actual = "" if actual is None else str(actual)
        if (actual == value) == negate:
            return False
    return True


def _merge(target: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7386); strategic merge patches are treated the same."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _json_patch(target: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1] if parts else None
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif op["op"] == "test" and (parent.get(last) if isinstance(parent, dict) else None) != op["value"]:
            raise ApiError(422, "Invalid", f"test operation failed at {op['path']}")
    return doc


class Store:
    """Objects by resource, the event log and the fault table. One lock guards everything."""

    def __init__(self, log_limit: int = 200_000):
        self.lock = threading.Condition()
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
        self.log: list[tuple[int, str, str, dict | None, dict | None]] = []  # rv, resource, type, old, new
        self.log_floor = 0  # watches from below this version get 410 Gone
        self.log_limit = log_limit
        self.rv = 0
        self.faults: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.late_faults: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.requests: list[tuple[str, str, str]] = []  # verb, resource, key: what the server saw
        self.access: set[tuple[str, str, str]] = set()  # (API group, resource[/sub], RBAC verb)
        self.watch_generation = 0
        self.stopping = False

    # --- test hooks -------------------------------------------------------------------------

    def fail(self, verb: str, resource: str, times: int = 1, code: int = 500) -> None:
        """Answer the next `times` requests of `verb` on `resource` with HTTP `code`."""
        with self.lock:
            self.faults[(verb, resource)].extend([code] * times)

    def fail_after(self, verb: str, resource: str, times: int = 1, code: int = 504) -> None:
        """Carry out the next `times` such requests but answer `code`: a reply lost on the way."""
        with self.lock:
            self.late_faults[(verb, resource)].extend([code] * times)

    def compact(self) -> None:
        """Forget the event log, as etcd compaction does: older watches get 410 Gone."""
        with self.lock:
            self.log.clear()
            self.log_floor = self.rv

    def close_watches(self) -> None:
        with self.lock:
            self.watch_generation += 1
            self.lock.notify_all()

    def count(self, verb: str, resource: str) -> int:
        with self.lock:
            return sum(1 for v, r, _ in self.requests if (v, r) == (verb, resource))

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self.objects[resource].get((namespace, name))
            return copy.deepcopy(obj)

    # --- operations ---------------------------------------------------------------------------

    def check_fault(self, verb: str, resource: str, key: str) -> None:
        self.requests.append((verb, resource, key))
        codes = self.faults.get((verb, resource))
        if codes:
            code = codes.pop(0)
            raise ApiError(code, "InternalError" if code >= 500 else "Injected", f"injected {code} on {verb} {resource}")

    def check_late_fault(self, verb: str, resource: str) -> None:
        codes = self.late_faults.get((verb, resource))
        if codes:
            code = codes.pop(0)
            raise ApiError(code, "Timeout", f"injected {code} after {verb} {resource}")

    def _record(self, resource: str, kind: str, old: dict | None, new: dict | None) -> None:
        self.log.append((self.rv, resource, kind, old, new))
        if len(self.log) > self.log_limit:
            drop = len(self.log) // 2
            self.log_floor = self.log[drop - 1][0]
            del self.log[:drop]
        self.lock.notify_all()

    def _stamp(self, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def create(self, resource: str, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        api_version, kind, namespaced, _ = RESOURCES[resource]
        meta = obj.setdefault("metadata", {})
        if namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise ApiError(400, "BadRequest", "the namespace of the object does not match the namespace on the request")
            meta["namespace"] = namespace
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, "Invalid", "metadata.name: Required value")
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        key = (namespace if namespaced else "", meta["name"])
        if key in self.objects[resource]:
            raise ApiError(409, "AlreadyExists", f'{resource} "{meta["name"]}" already exists')
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        meta.update(uid=str(uuid.uuid4()), generation=1,
                    creationTimestamp=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if resource == "pods":
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        self._stamp(obj)
        self.objects[resource][key] = obj
        self._record(resource, "ADDED", None, obj)
        return obj

    def replace(self, resource: str, key: tuple[str, str], new: dict[str, Any], status_only: bool | None) -> dict[str, Any]:
        """Store `new` over the object at `key`. `status_only` True/False isolates the status
        subresource (only status / everything but status changes); None replaces it all."""
        old = self.objects[resource].get(key)
        if old is None:
            raise ApiError(404, "NotFound", f'{resource} "{key[1]}" not found')
        wanted = (new.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource} "{key[1]}": '
                           "the object has been modified; please apply your changes to the latest version and try again")
        if status_only is True:
            merged = dict(copy.deepcopy(old), status=new.get("status", {}))
        else:
            merged = copy.deepcopy(new)
            merged["metadata"] = dict(new.get("metadata") or {}, **{k: old["metadata"][k] for k in (
                "uid", "creationTimestamp", "namespace", "name") if k in old["metadata"]})
            merged.setdefault("apiVersion", old["apiVersion"])
            merged.setdefault("kind", old["kind"])
            if status_only is False and "status" in old:
                merged["status"] = copy.deepcopy(old["status"])
            if merged.get("spec") != old.get("spec"):
                merged["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        self._stamp(merged)
        self.objects[resource][key] = merged
        self._record(resource, "MODIFIED", old, merged)
        return merged

    def delete(self, resource: str, key: tuple[str, str]) -> dict[str, Any]:
        old = self.objects[resource].pop(key, None)
        if old is None:
            raise ApiError(404, "NotFound", f'{resource} "{key[1]}" not found')
        gone = copy.deepcopy(old)
        self._stamp(gone)
        self._record(resource, "DELETED", old, gone)
        return gone

    def bind(self, key: tuple[str, str], body: dict[str, Any]) -> dict[str, Any]:
        pod = self.objects["pods"].get(key)
        if pod is None:
            raise ApiError(404, "NotFound", f'pods "{key[1]}" not found')
        node = (body.get("target") or {}).get("name")
        if not node:
            raise ApiError(422, "Invalid", "target.name: Required value")
        if pod.get("spec", {}).get("nodeName"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{key[1]}": '
                           f'pod {key[1]} is already assigned to node "{pod["spec"]["nodeName"]}"')
        bound = copy.deepcopy(pod)
        bound["spec"]["nodeName"] = node
        bound["status"].setdefault("conditions", []).append({"type": "PodScheduled", "status": "True"})
        del bound["metadata"]["resourceVersion"]
        self.replace("pods", key, bound, None)
        return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}


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
        return resource, namespace, (parts[1] if len(parts) > 1 else None), (parts[2] if len(parts) > 2 else None), query

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
            verb = "status"
        group, plural = next(route for route, name in ROUTES.items() if name == resource)
        rbac_verb = {"bind": "create", "evict": "create", "status": "update" if method == "PUT" else "patch"}.get(verb, verb)
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
                     and _matches(o, query.get("labelSelector"), query.get("fieldSelector"))]
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
            if "json-patch" in (self.headers.get("Content-Type") or ""):
                body = _json_patch(current, body)
                body["metadata"]["resourceVersion"] = (body.get("metadata") or {}).get("resourceVersion")
                if body["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]:
                    del body["metadata"]["resourceVersion"]
            else:
                body = _merge(current | {"metadata": {k: v for k, v in current["metadata"].items()
                                                      if k != "resourceVersion"}}, body)
        return 200, copy.deepcopy(store.replace(resource, key, body, status_only))

    def _watch(self, resource: str, namespace: str, query: dict[str, str]) -> None:
        store = self.store
        labels, fields = query.get("labelSelector"), query.get("fieldSelector")
        timeout = float(query.get("timeoutSeconds") or 1800)
        with store.lock:
            group, plural = next(route for route, name in ROUTES.items() if name == resource)
            store.access.add((group, plural, "watch"))
            store.check_fault("watch", resource, namespace)
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
                and _matches(obj, labels, fields)

        deadline = threading.Event()
        timer = threading.Timer(timeout, lambda: (deadline.set(), store.close_watches()))
        timer.start()
        try:
            with store.lock:
                since = query.get("resourceVersion") or "0"
                position = int(since)
                generation = store.watch_generation
                if position == 0:
                    for obj in list(store.objects[resource].values()):
                        if visible(obj):
                            emit("ADDED", obj)
                    position = store.rv
                    send()
                elif position < store.log_floor:
                    emit("ERROR", ApiError(410, "Expired", f"too old resource version: {position} ({store.log_floor})").status())
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
