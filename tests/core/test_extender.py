"""The extender plugin against a real HTTP extender started in the test: what it is sent, and
how its answers filter, score and veto (Volcano's protocol, extender/argument.go); Volcano's
unit tests (TestMaxBodySizeLimit2, TestIsInterested) restated."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from central.errors import InputError
from central.model.cache import ClusterCache
from central.plugins.extender import MAX_BODY, ExtenderError, Settings, send
from central.scheduler import load_config
from central.scheduler.estimate import explain
from tests.ports import free_port
from tests.scenarios.harness import objects_of, run_case

Answer = Callable[[dict[str, Any]], Any]  # request body -> answer body (an int: that HTTP status)


class FakeExtender:
    """Records every request as (verb, body) and answers by verb from `answers`."""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                verb = self.path.strip("/")
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append((verb, body))
                answer = fake.answers.get(verb, lambda _: {})(body)
                if isinstance(answer, int):
                    self.send_response(answer)
                    self.end_headers()
                    return
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def bodies(self, verb: str) -> list[dict[str, Any]]:
        return [body for v, body in self.requests if v == verb]


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    fake = FakeExtender()
    thread = threading.Thread(target=fake.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def config(url: str, actions: str = "enqueue, allocate", **arguments: Any) -> str:
    args = {"extender.urlPrefix": url, **{f"extender.{k}": v for k, v in arguments.items()}}
    return json.dumps({"actions": actions, "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}, {"name": "extender", "arguments": args}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}]}]})


TWO_NODES = {"n1": {"cpu": 4, "memory": "8Gi"}, "n2": {"cpu": 4, "memory": "8Gi"}}
ONE_POD = {"ns/p": {"cpu": 1, "memory": "1Gi"}}


def run(conf: str, nodes: dict[str, Any] = TWO_NODES, pods: dict[str, Any] = ONE_POD, **case: Any) -> Any:
    result, _ = run_case({"config": conf, "nodes": nodes, "pods": pods, **case})
    return result


# --- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments, key, says", [
    pytest.param({"extender.predicateVerb": "predicate"}, "extender.urlPrefix", "required", id="no-url"),
    pytest.param({"extender.urlPrefix": "127.0.0.1:80"}, "extender.urlPrefix", "http://", id="url-without-scheme"),
    pytest.param({"extender.urlPrefix": "http://x", "extender.httpTimeout": "fast"}, "extender.httpTimeout",
                 "expected a duration", id="timeout"),
    pytest.param({"extender.urlPrefix": "http://x", "extender.httpTimeout": "0s"}, "extender.httpTimeout",
                 "more than 0", id="zero-timeout"),
    pytest.param({"extender.urlPrefix": "http://x", "extender.ignorable": "maybe"}, "extender.ignorable",
                 "expected true or false", id="ignorable"),
    pytest.param({"extender.urlPrefix": "http://x", "extender.managedResources": "nvidia.com/gpu"},
                 "extender.managedResources", "expected list", id="managed-not-a-list"),
    pytest.param({"extender.urlPrefix": "http://x", "extender.predicateVerb": 3}, "extender.predicateVerb",
                 "expected str", id="verb-not-a-string"),
    pytest.param({"extender.urlPrefix": "http://x", "extender.predicatVerb": "p"}, "extender.predicatVerb",
                 "unknown argument", id="typo"),
])
def test_bad_arguments_name_the_plugin_and_argument(arguments, key, says):
    conf = json.dumps({"actions": "allocate", "tiers": [{"plugins": [{"name": "extender", "arguments": arguments}]}]})
    with pytest.raises(InputError) as err:
        load_config(conf, "conf")
    line = str(err.value)
    assert "plugin extender" in line and key in line and says in line and "\n" not in line, line


def test_volcano_documented_arguments_load():
    args = {"extender.urlPrefix": "http://127.0.0.1", "extender.httpTimeout": "100ms",
            **{f"extender.{verb}": verb.removesuffix("Verb") for verb in (
                "onSessionOpenVerb", "onSessionCloseVerb", "predicateVerb", "prioritizeVerb", "preemptableVerb",
                "reclaimableVerb", "queueOverusedVerb", "jobEnqueueableVerb", "jobEnqueuedVerb", "jobReadyVerb",
                "allocateFuncVerb", "deallocateFuncVerb")},
            "extender.ignorable": True, "extender.managedResources": ["nvidia.com/gpu", "nvidia.com/gpumem"]}
    conf = load_config(json.dumps({"actions": "allocate", "tiers": [{"plugins": [{"name": "extender", "arguments": args}]}]}), "c")
    settings = conf.plugin("extender").settings
    assert settings.timeout == 0.1 and settings.ignorable and len(settings.verbs) == 12
    assert settings.verbs["predicateVerb"] == "predicate"


# --- predicate ------------------------------------------------------------------------------


def test_predicate_sends_go_named_task_and_node_and_filters(extender):
    extender.answers["predicate"] = lambda body: (
        {"status": "n1 is reserved", "code": 2} if body["node"]["Name"] == "n1" else {"status": "", "code": 0})
    result = run(config(extender.url, predicateVerb="predicate"))
    assert result.binds == {"ns/p": "n2"}
    body = extender.bodies("predicate")[0]
    assert set(body) == {"task", "node"}
    task = body["task"]
    assert task["UID"] == "ns/p" and task["Name"] == "p" and task["Namespace"] == "ns"
    assert task["Resreq"] == {"MilliCPU": 1000.0, "Memory": 1073741824.0, "ScalarResources": None, "MaxTaskNum": 0}
    assert task["Status"] == 1  # Volcano's Pending
    assert task["Pod"]["metadata"]["name"] == "p"
    assert task["Pod"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1073741824"}
    node = body["node"]
    assert node["Allocatable"]["MilliCPU"] == 4000.0 and node["Idle"]["MilliCPU"] == 4000.0
    assert node["Node"]["metadata"]["name"] == node["Name"] and node["Tasks"] == {}


def test_predicate_failing_everywhere_says_why(extender):
    extender.answers["predicate"] = lambda body: {"Status": "licence server says no"}  # Go's keys are case-blind
    result = run(config(extender.url, predicateVerb="predicate"))
    assert result.binds == {}
    assert "extender: licence server says no" in result.pending["ns/p"]


def test_an_unreachable_extender_fails_the_predicate_with_the_reason():
    url = f"http://127.0.0.1:{free_port()}"
    result = run(config(url, predicateVerb="predicate", httpTimeout="200ms"))
    assert result.binds == {}
    assert f"extender: predicate with extender at URL {url}/predicate" in result.pending["ns/p"]


def test_an_ignorable_unreachable_extender_is_a_no_op():
    url = f"http://127.0.0.1:{free_port()}"
    result = run(config(url, predicateVerb="predicate", prioritizeVerb="prioritize", ignorable=True))
    assert result.binds == {"ns/p": "n1"}


def test_an_error_status_fails_the_predicate(extender):
    extender.answers["predicate"] = lambda body: 500
    result = run(config(extender.url, predicateVerb="predicate"))
    assert f"failed predicate with extender at URL {extender.url}/predicate, code 500" in result.pending["ns/p"]


def test_a_body_over_10mib_is_refused(extender):
    """Volcano's TestMaxBodySizeLimit2."""
    extender.answers["test"] = lambda body: b'{"padding":"' + b"a" * (MAX_BODY + 1) + b'"}'
    with pytest.raises(ExtenderError, match="http: request body too large"):
        send(Settings(extender.url, 5.0, {}, False, frozenset()), "test", {"task": {}, "node": {}})


# --- prioritize -----------------------------------------------------------------------------


def test_prioritize_scores_decide_the_node(extender):
    extender.answers["prioritize"] = lambda body: {"nodeScore": {"n2": 100}, "errorMessage": ""}
    result = run(config(extender.url, prioritizeVerb="prioritize"))
    assert result.binds == {"ns/p": "n2"}
    body = extender.bodies("prioritize")[0]
    assert sorted(n["Name"] for n in body["nodes"]) == ["n1", "n2"] and body["task"]["UID"] == "ns/p"


def test_a_prioritize_error_holds_the_job_with_the_reason(extender):
    extender.answers["prioritize"] = lambda body: {"errorMessage": "scores unavailable"}
    result = run(config(extender.url, prioritizeVerb="prioritize"))
    assert result.binds == {}
    assert "plugin extender: prioritize answered an error: 'scores unavailable'" in result.pending["ns/p"]


# --- managedResources (Volcano's TestIsInterested) ------------------------------------------


@pytest.mark.parametrize("managed, requests, asked", [
    pytest.param([], {"cpu": "100m"}, True, id="empty managed resources - should return true"),
    pytest.param(["nvidia.com/gpu"], {"cpu": "100m", "nvidia.com/gpu": 1}, True, id="container has managed resource in requests"),
    pytest.param(["nvidia.com/gpu"], {"cpu": "100m", "memory": "128Mi"}, False, id="no managed resources in containers"),
    pytest.param(["nvidia.com/gpu", "example.com/fpga"], {"cpu": "100m", "example.com/fpga": 1}, True,
                 id="multiple managed resources - one match"),
])
def test_only_pods_with_managed_resources_are_sent(extender, managed, requests, asked):
    nodes = {"n1": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": 4, "example.com/fpga": 4}}
    pods = {"ns/p": {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}]}}}
    run(config(extender.url, predicateVerb="predicate", managedResources=managed), nodes=nodes, pods=pods)
    assert bool(extender.bodies("predicate")) == asked


def test_limits_only_and_init_containers_count_as_requests(extender):
    """Volcano's "in limits" and "init container" cases: an extended resource's limit is its
    request, and an init container's request is part of the pod's effective request."""
    nodes = {"n1": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": 4}}
    pods = {"ns/limits": {"spec": {"containers": [{"name": "c", "image": "x",
                                                   "resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
            "ns/init": {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
                                 "initContainers": [{"name": "i", "image": "x",
                                                     "resources": {"requests": {"nvidia.com/gpu": 1}}}]}}}
    run(config(extender.url, predicateVerb="predicate", managedResources=["nvidia.com/gpu"]), nodes=nodes, pods=pods)
    assert {b["task"]["UID"] for b in extender.bodies("predicate")} == {"ns/limits", "ns/init"}


# --- victims --------------------------------------------------------------------------------


PREEMPT = {
    "nodes": {"n1": {"cpu": 3, "memory": "8Gi"}},
    "objects": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}],
    "podgroups": {"ns/low": {"minMember": 1, "queue": "default", "phase": "Running"},
                  "ns/high": {"minMember": 1, "queue": "default", "priorityClassName": "high"}},
    "pods": {"ns/low-a": {"group": "low", "cpu": 1, "memory": "1Gi", "node": "n1"},
             "ns/low-b": {"group": "low", "cpu": 1, "memory": "1Gi", "node": "n1"},
             "ns/low-c": {"group": "low", "cpu": 1, "memory": "1Gi", "node": "n1"},
             "ns/high": {"group": "high", "cpu": 1, "memory": "1Gi"}}}


@pytest.mark.parametrize("answer, evicted", [
    # Without the extender low-c goes (victim order); gang lets low-c and low-b go (minMember 1).
    pytest.param({"status": 1, "victims": [{"UID": "ns/low-b"}]}, ["ns/low-b"], id="the extender's choice"),
    pytest.param({"status": 1, "victims": [{"UID": "ns/low-a"}]}, [], id="intersected with gang's"),
    pytest.param({"status": 1, "victims": [{"UID": "ns/low-b"}, {"UID": "ns/elsewhere"}]}, ["ns/low-b"],
                 id="names not offered are ignored"),
    pytest.param({"status": -1, "victims": []}, [], id="a veto"),
    pytest.param({"status": 0, "victims": [{"UID": "ns/low-b"}]}, ["ns/low-c"], id="abstaining leaves the choice to the others"),
])
def test_preemptable_answers_choose_the_victims(extender, answer, evicted):
    extender.answers["preemptable"] = lambda body: answer
    result = run(config(extender.url, "enqueue, allocate, preempt", preemptableVerb="preemptable"), **PREEMPT)
    assert result.evictions == evicted
    body = extender.bodies("preemptable")[0]
    assert body["evictor"]["UID"] == "ns/high"
    assert sorted(t["UID"] for t in body["evictees"]) == ["ns/low-a", "ns/low-b", "ns/low-c"]


def test_an_unreachable_preemptable_extender_vetoes_unless_ignorable():
    url = f"http://127.0.0.1:{free_port()}"
    strict = run(config(url, "enqueue, allocate, preempt", preemptableVerb="preemptable"), **PREEMPT)
    assert strict.evictions == []
    lenient = run(config(url, "enqueue, allocate, preempt", preemptableVerb="preemptable", ignorable=True), **PREEMPT)
    assert lenient.evictions == ["ns/low-c"]  # as without the extender


# --- jobs, queues, events, session ----------------------------------------------------------


def test_job_enqueueable_reject_keeps_the_job_pending(extender):
    extender.answers["jobEnqueueable"] = lambda body: {"status": -1 if body["job"]["Name"] == "held" else 1}
    pods = {"ns/a": {"group": "held", "cpu": 1, "memory": "1Gi"}, "ns/b": {"group": "free", "cpu": 1, "memory": "1Gi"}}
    # enqueue asks the plugins only about PodGroups with minResources (Volcano's rule)
    podgroups = {f"ns/{name}": {"minMember": 1, "queue": "default", "minResources": {"cpu": "1"}} for name in ("held", "free")}
    result = run(config(extender.url, jobEnqueueableVerb="jobEnqueueable", jobEnqueuedVerb="jobEnqueued"),
                 pods=pods, podgroups=podgroups)
    assert result.binds == {"ns/b": "n1"}
    assert result.podgroups["ns/held"]["phase"] == "Pending"
    job = extender.bodies("jobEnqueueable")[0]["job"]
    assert {"UID", "Queue", "MinAvailable", "Tasks", "PodGroup"} <= set(job)
    assert [b["job"]["Name"] for b in extender.bodies("jobEnqueued")] == ["free"]


def test_job_ready_false_holds_the_gang(extender):
    extender.answers["jobReady"] = lambda body: {"status": False}
    result = run(config(extender.url, jobReadyVerb="jobReady"))
    assert result.binds == {}


def test_queue_overused_stops_allocation(extender):
    extender.answers["queueOverused"] = lambda body: {"overused": body["queue"]["Name"] == "default"}
    result = run(config(extender.url, queueOverusedVerb="queueOverused"))
    assert result.binds == {}
    assert extender.bodies("queueOverused")[0]["queue"]["Queue"]["metadata"]["name"] == "default"


def test_allocate_event_error_refuses_the_allocation(extender):
    extender.answers["allocateFunc"] = lambda body: {"errorMessage": "no licence left"}
    result = run(config(extender.url, allocateFuncVerb="allocateFunc", deallocateFuncVerb="deallocateFunc"))
    assert result.binds == {}
    assert "plugin extender: allocateFunc refused ns/p: no licence left" in result.pending["ns/p"]


def test_session_open_and_close_bodies(extender):
    run(config(extender.url, onSessionOpenVerb="open", onSessionCloseVerb="close"))
    opened = extender.bodies("open")[0]
    assert set(opened) == {"Jobs", "Nodes", "Queues", "NamespaceInfo", "RevocableNodes", "NodeList"}
    assert sorted(opened["Nodes"]) == ["n1", "n2"] and "ns/podgroup-p" in opened["Jobs"]
    assert extender.bodies("close") == [{}]


def test_a_failed_session_open_fails_every_verb_unless_ignorable(extender):
    extender.answers["open"] = lambda body: 503
    extender.answers["predicate"] = lambda body: {}
    strict = run(config(extender.url, onSessionOpenVerb="open", predicateVerb="predicate"))
    assert strict.binds == {} and "onSessionOpen failed" in strict.pending["ns/p"]
    assert extender.bodies("predicate") == []  # not asked again this session
    lenient = run(config(extender.url, onSessionOpenVerb="open", predicateVerb="predicate", ignorable=True))
    assert lenient.binds == {"ns/p": "n1"} and extender.bodies("predicate")


def test_start_time_estimates_never_call_the_extender(extender):
    """The estimator's forward run judges a cluster that exists only in the run: the extender,
    a service outside, is left out of its sessions (the live cycle still calls it)."""
    conf = load_config(config(extender.url, predicateVerb="predicate"))
    cache = ClusterCache()
    for obj in objects_of({"nodes": {"n1": {"cpu": 1, "memory": "1Gi"}},
                           "pods": {"ns/big": {"cpu": 2, "memory": "1Gi"}, "ns/p": {"cpu": 1, "memory": "1Gi"}}}):
        cache.apply(obj)
    explain(cache, conf, datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert extender.requests == []
    assert [p.name for tier in conf.offline().tiers for p in tier if p.name == "extender"] == []
    assert run(config(extender.url, predicateVerb="predicate")).binds and extender.bodies("predicate")
