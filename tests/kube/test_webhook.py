"""The admission webhook over real HTTPS, deciding against objects watched from a real kube-apiserver."""

from __future__ import annotations

import base64
import datetime
import http.client
import json
import socket
import ssl
import threading
import urllib.error
import urllib.request

import pytest

from central.admission import DEFAULT_CONFIG, admit
from central.admission.webhook import ClusterView, TLSContext, WebhookServer, review
from central.scheduler.metrics import BoundedHTTPServer
from tests.builders import job, pod, task
from tests.kube.certs import self_signed
from tests.waiting import eventually


@pytest.fixture
def webhook(real, tmp_path):
    """The webhook serving with its own ServiceAccount's token: daemonset/'s RBAC judges its reads."""
    kube = real.as_account("caldera-admission", tmp_path)
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "closed"},
             "spec": {"weight": 1}, "status": {"state": "Closed"}})
    cert, key = self_signed(tmp_path)
    view = ClusterView(kube).start()
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG, kube)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    context = ssl.create_default_context(cafile=cert)

    def call(route: str, body: dict | None = None) -> tuple[int, dict]:
        url = f"https://localhost:{server.server_address[1]}{route}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    eventually(view.synced, what="the webhook's caches")
    call.port, call.context = server.server_address[1], context  # for tests that hold a connection
    yield call
    server.shutdown()
    server.server_close()
    view.stop()


def admission(obj: dict, operation: str = "CREATE", old: dict | None = None) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": operation, "object": obj, "oldObject": old}}


def test_mutate_returns_the_defaults_as_a_json_patch(webhook):
    code, body = webhook("/jobs/mutate", admission(job(queue=None, tasks=[task("worker")])))
    response = body["response"]
    assert (code, response["uid"], response["allowed"], response["patchType"]) == (200, "u-1", True, "JSONPatch")
    patch = json.loads(base64.b64decode(response["patch"]))
    spec = next(op["value"] for op in patch if op["path"] == "/spec")
    assert spec["queue"] == "default" and spec["schedulerName"] == "volcano"


@pytest.mark.parametrize("route, request_body, field", [
    pytest.param("/jobs/validate", admission(job(tasks=[task("w"), task("w")])), "spec.tasks[1].name",
                 id="duplicate-task"),
    pytest.param("/jobs/validate", admission(job(tasks=[task("w")], queue="closed")), "spec.queue", id="closed-queue"),
    pytest.param("/jobs/validate", admission(job(tasks=[task("w")], queue="nosuch")), "spec.queue", id="missing-queue"),
    pytest.param("/queues/validate", admission(None, "DELETE", {"apiVersion": "scheduling.volcano.sh/v1beta1",
                                                                "kind": "Queue", "metadata": {"name": "default"}}),
                 "", id="delete-default-queue"),
])
def test_validate_denies_with_the_field_path(webhook, route, request_body, field):
    code, body = webhook(route, request_body)
    response = body["response"]
    assert code == 200 and response["allowed"] is False
    assert field in response["status"]["message"]


def test_a_good_job_is_allowed(webhook):
    code, body = webhook("/jobs/validate", admission(job()))
    assert body["response"] == {"uid": "u-1", "allowed": True}


def test_calls_share_one_kept_alive_connection_until_a_body_is_left_unread(webhook):
    conn = http.client.HTTPSConnection("localhost", webhook.port, context=webhook.context, timeout=10)
    sockets = []
    for route in ("/jobs/validate", "/jobs/validate", "/nowhere"):
        conn.request("POST", route, json.dumps(admission(job(tasks=[task("w")]))), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        sockets.append(conn.sock)
    assert sockets[0] is not None and sockets[1] is sockets[0]  # no new TLS handshake per call
    assert answer.status == 404 and sockets[2] is None  # closed: its body was never read
    conn.close()


@pytest.mark.parametrize("route, body, code", [
    pytest.param("/jobs/validate", {"no": "request"}, 400, id="not-a-review"),
    pytest.param("/nodes/mutate", admission({}), 404, id="unknown-route"),
])
def test_malformed_requests_get_http_errors(webhook, route, body, code):
    assert webhook(route, body)[0] == code


def test_health_and_refusal_before_sync(webhook, real):
    assert webhook("/healthz")[0] == 200
    cold = ClusterView(real.kube)  # never started: not synced
    response = review("/jobs/validate", admission(job(tasks=[task("w")]))["request"], cold, DEFAULT_CONFIG)
    assert response["allowed"] is False and response["status"]["code"] == 503


def test_a_queue_the_watch_has_not_delivered_is_read_not_refused(real, tmp_path):
    """A queue created just before its first job: the view reads it (with the webhook's own
    token) instead of refusing the job; a queue that does not exist is still refused."""
    view = ClusterView(real.as_account("caldera-admission", tmp_path))  # its watch never runs
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "fresh"},
              "spec": {"weight": 1}})
    assert "fresh" in view.cluster("fresh").queues
    assert "absent" not in view.cluster("absent").queues
    assert admit(job(tasks=[task("w")], queue="fresh"), view.cluster("fresh"), DEFAULT_CONFIG).allowed


class RecordingClient:
    """Answers every GET with a Queue named as its last path segment, recording the URLs."""

    def __init__(self):
        self.urls: list[str] = []

    def get_or_none(self, url):
        self.urls.append(url)
        return {"kind": "Queue", "metadata": {"name": url.rsplit("/", 1)[-1]}, "spec": {"weight": 1}}


@pytest.mark.parametrize("queue", [
    pytest.param("../../../api/v1/namespaces/kube-system/secrets/token", id="traversal"),
    pytest.param("a/b", id="slash"),
    pytest.param("q?watch=true", id="query"),
    pytest.param("Q", id="upper-case"),
    pytest.param("q" * 254, id="too-long"),
])
def test_a_queue_named_by_no_object_name_is_never_read(queue):
    """The queue a tenant's job names goes into the webhook's GET only when it can name an
    object: no other path is read with the webhook's token, and the job is refused as before."""
    client = RecordingClient()
    view = ClusterView(client)  # its watch never runs
    assert queue not in view.cluster(queue).queues
    assert client.urls == []
    assert "fresh" in view.cluster("fresh").queues and client.urls == ["/apis/scheduling.volcano.sh/v1beta1/queues/fresh"]


def test_missing_then_expired_certificate_is_a_problem_not_a_crash(tmp_path, caplog):
    tls = TLSContext(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    assert tls.current() is None and tls.problem == f"cannot read {tmp_path / 'tls.crt'}: No such file or directory"
    assert len([r for r in caplog.records if r.levelname == "ERROR"]) == 1  # logged once, not per connection
    self_signed(tmp_path)
    assert tls.current() is not None and tls.problem is None
    tls.clock = lambda: datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
    assert tls.current() is None and "expired" in tls.problem


def test_admission_rbac_covers_what_the_webhook_reads(real, webhook):
    assert webhook("/jobs/validate", admission(job(tasks=[task("w")])))[1]["response"]["allowed"]
    assert real.proxy.count("list", "queues") and real.proxy.count("watch", "queues")  # it did read, as itself
    assert not real.proxy.forbidden, f"the webhook's RBAC lacks {real.proxy.forbidden}"


def as_user(review_body: dict, username: str) -> dict:
    review_body["request"]["userInfo"] = {"username": username}
    return review_body


@pytest.mark.parametrize("route, obj, field", [
    pytest.param("/jobs/validate", job(tasks=[{"name": {"a": 1}, "replicas": 1, "template": {"metadata": [1]}}]),
                 "spec.tasks[0].name", id="task-name-map"),
    pytest.param("/jobs/validate", {**job(tasks=[task("w")]), "spec": [1, 2]}, "spec", id="spec-list"),
    pytest.param("/podgroups/validate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                         "metadata": {"name": "pg", "namespace": "default"},
                                         "spec": {"minResources": {"cpu": "1e999999999"}}},
                 "spec.minResources.cpu", id="podgroup-quantity"),
    pytest.param("/queues/validate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                      "metadata": {"name": "q"}, "spec": {"parent": {"a": 1}}},
                 "spec.parent", id="queue-parent-map"),
    pytest.param("/pods/validate", pod(cpu=float("inf")), "spec.containers[0].resources.requests.cpu",
                 id="pod-infinite-cpu"),
    pytest.param("/pods/validate", pod(annotations={"caldera.sh/cpuset": "0-3"}), "caldera.sh/cpuset",
                 id="pod-pinned-by-its-owner"),
    pytest.param("/jobs/validate", {"kind": "Job", "apiVersion": "batch.volcano.sh/v1alpha1", "metadata": {"name": "j"},
                                    "spec": {"x": json.loads("[" * 150 + "]" * 150)}}, "nested deeper", id="deep"),
])
def test_a_malformed_object_is_a_denial_naming_the_field_never_a_500(webhook, route, obj, field):
    body_in = as_user(admission(obj), "alice")
    code, body = webhook(route, json.loads(json.dumps(body_in).replace("Infinity", '"Infinity"'))
                         if "Infinity" in json.dumps(body_in) else body_in)
    response = body["response"]
    assert code == 200 and response["allowed"] is False and response["status"]["code"] == 400, body
    assert field in response["status"]["message"]


def test_the_scheduler_may_pin_and_other_schedulers_pods_pass(webhook):
    pinned = pod(annotations={"caldera.sh/cpuset": "0-3"})
    scheduler = as_user(admission(pinned), DEFAULT_CONFIG.scheduler_user)
    assert webhook("/pods/validate", scheduler)[1]["response"]["allowed"]
    other = dict(pod(cpu="lots"), spec={"schedulerName": "default-scheduler", "containers": []})
    assert webhook("/pods/validate", as_user(admission(other), "alice"))[1]["response"]["allowed"]


def test_the_view_follows_events_without_rebuilding_per_request():
    view = ClusterView(None)  # no reflectors: events applied by hand
    pg = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": "q"}}
    view.apply("Queue", "ADDED", {"metadata": {"name": "q"}, "spec": {}})
    view.apply("PodGroup", "ADDED", pg)
    first = view.cluster()
    assert view.cluster() is first and first.podgroups_in("q") == 1  # no change, no rebuild
    view.apply("PodGroup", "MODIFIED", {**pg, "spec": {"queue": "default"}})
    view.apply("PodGroup", "ADDED", {**pg, "metadata": {"name": "pg2", "namespace": "ns"}})
    second = view.cluster()
    assert second is not first and (second.podgroups_in("q"), second.podgroups_in("default")) == (1, 1)
    view.apply("PodGroup", "DELETED", pg)
    view.apply("Queue", "DELETED", {"metadata": {"name": "q"}})
    assert view.cluster().podgroups_in("default") == 0 and "q" not in view.cluster().queues


def eviction(namespace: str, pod: str, node_claim: list[str] | None) -> dict:
    extra = {} if node_claim is None else {"authentication.kubernetes.io/node-name": node_claim}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-2", "operation": "CREATE", "namespace": namespace, "name": pod,
                        "subResource": "eviction", "object": {"kind": "Eviction"},
                        "userInfo": {"username": "system:serviceaccount:caldera-system:caldera-nodeagent",
                                     "extra": extra}}}


@pytest.mark.parametrize("target, claim, allowed, message", [
    pytest.param("on-n1", ["n1"], True, None, id="its-own-node"),
    pytest.param("on-n1", ["n2"], False, "the agent of node n2 may not evict {namespace}/on-n1, which runs on n1",
                 id="another-node"),
    pytest.param("on-n1", None, False, "bound to no node", id="token-without-node"),
    pytest.param("gone", ["n2"], True, None, id="pod-already-gone"),
])
def test_an_agent_evicts_only_pods_on_its_node(real, webhook, target, claim, allowed, message):

    real.put(pod("on-n1", node="n1"))
    code, body = webhook("/pods/eviction/validate", eviction(real.namespace, target, claim))
    assert code == 200 and body["response"]["allowed"] is allowed
    if message:
        status = body["response"]["status"]
        assert message.format(namespace=real.namespace) in status["message"] and status["code"] == 403


def tls_connection(port: int, context: ssl.SSLContext) -> ssl.SSLSocket:
    import socket

    return context.wrap_socket(socket.create_connection(("localhost", port), timeout=10), server_hostname="localhost")


def test_connections_beyond_the_cap_are_closed_at_once(real, tmp_path):
    """The cap is the metrics servers' own mechanism, and a normal review is answered once a slot is free."""
    cert, key = self_signed(tmp_path)
    view = ClusterView(real.kube).start()
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG, max_connections=2)
    assert isinstance(server, BoundedHTTPServer)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    context = ssl.create_default_context(cafile=cert)
    port = server.server_address[1]
    try:
        held = [tls_connection(port, context) for _ in range(2)]  # idle, each holding a thread
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            tls_connection(port, context).recv(1)  # closed during or right after the handshake
        assert server.refused >= 1
        held[0].close()
        eventually(lambda: server.slots._value >= 1, what="the slot given back")
        eventually(view.synced, what="the webhook's caches")
        conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=10)
        conn.request("POST", "/jobs/validate", json.dumps(admission(job())), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["response"] == {"uid": "u-1", "allowed": True}
        conn.close()
        held[1].close()
    finally:
        server.shutdown()
        server.server_close()
        view.stop()


def test_a_trickling_client_is_cut_at_the_request_deadline(real, tmp_path):
    import time

    cert, key = self_signed(tmp_path)
    view = ClusterView(real.kube).start()
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), view, DEFAULT_CONFIG, request_deadline_s=1.0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    context = ssl.create_default_context(cafile=cert)
    try:
        conn = tls_connection(server.server_address[1], context)
        conn.sendall(b"POST /jobs/validate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        started = time.monotonic()
        cut = False
        while time.monotonic() - started < 8:  # each byte well within the 15 s per-read timeout
            try:
                conn.sendall(b"x")
                time.sleep(0.2)
            except OSError:
                cut = True
                break
        assert cut, "still connected after 8 s of trickling"
        assert time.monotonic() - started < 4
    finally:
        server.shutdown()
        server.server_close()
        view.stop()


def test_the_controllers_create_only_for_a_job_that_exists(real, webhook):
    """The owner is read with the webhook's own token (daemonset/'s RBAC): a real Job's uid
    passes, a forged uid or a missing Job is refused."""
    created = real.put(job("owner", tasks=[task("w")]))
    uid = created["metadata"]["uid"]

    def pod_create(name: str, owner_uid: str) -> dict:
        owned = pod("p")
        owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                                 "name": name, "uid": owner_uid, "controller": True}]
        owned["metadata"].setdefault("annotations", {})["volcano.sh/task-spec"] = "w"  # its task, as the controllers make it
        body = as_user(admission(owned), "system:serviceaccount:caldera-system:caldera-controllers")
        body["request"].update(namespace=real.namespace, resource={"group": "", "version": "v1", "resource": "pods"})
        return webhook("/owners/validate", body)[1]["response"]

    assert pod_create("owner", uid)["allowed"]
    forged = pod_create("owner", "00000000-0000-0000-0000-000000000000")
    assert not forged["allowed"] and "another uid" in forged["status"]["message"]
    missing = pod_create("nobody", uid)
    assert not missing["allowed"] and "does not exist" in missing["status"]["message"]
    assert not real.proxy.forbidden, f"the webhook's RBAC lacks {real.proxy.forbidden}"


def test_with_a_client_ca_only_a_client_holding_its_certificate_is_served(tmp_path):
    from central.localcluster import pki

    cert, key = self_signed(tmp_path)
    clients = pki.new_ca(tmp_path / "clients", "webhook-client-ca")
    apiserver = pki.issue(clients, tmp_path / "clients", "apiserver", "kube-apiserver-webhook-client")
    stranger = pki.issue(pki.new_ca(tmp_path / "other", "other-ca"), tmp_path / "other", "user", "alice")
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key, client_ca=str(clients.cert)), ClusterView(None),
                           DEFAULT_CONFIG)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()

    def healthz(client: pki.Pair | None) -> int:
        context = ssl.create_default_context(cafile=cert)
        if client is not None:
            context.load_cert_chain(str(client.cert), str(client.key))
        connection = http.client.HTTPSConnection("localhost", server.server_address[1], context=context, timeout=10)
        try:
            connection.request("GET", "/healthz")
            return connection.getresponse().status
        finally:
            connection.close()

    try:
        assert healthz(apiserver) == 200
        for client in (None, stranger):  # refused in the handshake (TLS 1.3: at the first read)
            with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
                healthz(client)
    finally:
        server.shutdown()
        server.server_close()


def test_an_answer_leaves_in_one_write(tmp_path):
    """Headers and body in one TLS record: in two writes the body waited, under Nagle's
    algorithm, for the client's delayed ACK of the headers on every kept-alive call. A TLS
    read returns one record's bytes, so the first read holds the whole answer only if it was
    written at once."""
    cert, key = self_signed(tmp_path)
    server = WebhookServer(("127.0.0.1", 0), TLSContext(cert, key), ClusterView(None), DEFAULT_CONFIG)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    context = ssl.create_default_context(cafile=cert)
    body = json.dumps({"request": {"uid": "1", "operation": "CREATE", "object": pod("p", "ml", cpu="1")}}).encode()
    try:
        with context.wrap_socket(socket.create_connection(server.server_address), server_hostname="localhost") as conn:
            for _ in range(2):  # the second on the kept-alive connection
                conn.sendall(b"POST /pods/validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                first = conn.recv(65536)
                head, _, rest = first.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
                assert len(rest) == length and json.loads(rest)["response"]["allowed"] is True
    finally:
        server.shutdown()
        server.server_close()
