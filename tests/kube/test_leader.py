"""Leader election on a Lease: one leader at a time, hand-over on release and on expiry."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from central.kube.client import ApiError
from central.kube.leader import LeaderElector, run_terms
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod
from tests.kube.fakes import RecordingCache, first_fit_cycle
from tests.waiting import eventually

FAST = {"lease_duration": 2, "renew_deadline": 1.5, "retry_period": 0.1}




def contend(candidate: LeaderElector, stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=candidate.acquire, args=(stop,), daemon=True)
    thread.start()
    return thread


def lease(real) -> dict[str, Any]:
    return real.admin.get(f"/apis/coordination.k8s.io/v1/namespaces/{real.namespace}/leases/vc-scheduler")


def real_elector(real, identity: str) -> LeaderElector:
    return LeaderElector(real.kube, real.namespace, "vc-scheduler", identity, **FAST)


def test_release_hands_over_without_waiting_for_expiry(real):
    stop_a, stop_b = threading.Event(), threading.Event()
    a, b = real_elector(real, "a"), real_elector(real, "b")
    assert a.acquire(stop_a)
    contend(b, stop_b)
    try:
        eventually(lambda: real.proxy.count("get", "leases") >= 4, what="b trying")
        assert not b.leading.is_set() and lease(real)["spec"]["holderIdentity"] == "a"
        a.release()
        eventually(b.leading.is_set, timeout=1.5, what="b leading before a's lease could expire")
        assert lease(real)["spec"]["holderIdentity"] == "b"
        assert lease(real)["spec"]["leaseTransitions"] == 1
    finally:
        stop_a.set()
        stop_b.set()


def test_expired_lease_is_taken_over_and_old_leader_notices(real):
    stop_a, stop_b = threading.Event(), threading.Event()
    a, b = real_elector(real, "a"), real_elector(real, "b")
    assert a.acquire(stop_a)
    real.proxy.fail("update", "leases", times=1000, code=500)  # a cannot renew any more...
    contend(b, stop_b)
    try:
        eventually(a.lost.is_set, what="a giving up after its renew deadline")
        real.proxy.clear_failures()  # ...and b can write once the lease is stale
        eventually(b.leading.is_set, what="b taking the expired lease")
        assert lease(real)["spec"]["holderIdentity"] == "b"
    finally:
        stop_a.set()
        stop_b.set()


def test_two_schedulers_never_both_bind(real):
    real.put(node("n1", pods=100))
    runs = []
    for identity in ("a", "b"):
        scheduler = Scheduler(real.kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None),
                              period=0.05, elector=real_elector(real, identity))
        stop = threading.Event()
        thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
        thread.start()
        runs.append((scheduler, stop, thread))
    (first, stop_first, thread_first), (second, stop_second, thread_second) = runs
    try:
        leader = eventually(lambda: next((s for s, _, _ in runs if s.ready.is_set()), None), what="a leader")
        for i in range(5):
            real.put(pod(f"p{i}"))
        eventually(lambda: all(real.pod(f"p{i}")["spec"].get("nodeName") for i in range(5)),
                   what="first pods bound")
        leader_run = next(r for r in runs if r[0] is leader)
        standby = next(r for r in runs if r[0] is not leader)
        leader_run[1].set()  # clean stop: drains binds, releases the lease
        leader_run[2].join(10)
        eventually(standby[0].ready.is_set, what="the standby taking over")
        for i in range(5, 10):
            real.put(pod(f"p{i}"))
        eventually(lambda: all(real.pod(f"p{i}")["spec"].get("nodeName") for i in range(10)),
                   what="later pods bound")
        standby[0].sink.drain()
    finally:
        stop_first.set()
        stop_second.set()
        thread_first.join(10)
        thread_second.join(10)
    assert real.proxy.count("create", "pods/binding") == 10  # one Binding per pod, no 409
    assert leader.cycles > 0 and standby[0].cycles > 0


def test_a_leader_whose_lease_is_taken_stops_scheduling(real):
    real.put(node("n1", pods=100))
    scheduler = Scheduler(real.kube, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None),
                          period=0.05, elector=real_elector(real, "a"))
    stop = threading.Event()
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(scheduler.run(stop)), daemon=True)
    thread.start()
    try:
        eventually(scheduler.ready.is_set, what="a leading")
        # split brain: someone else wrote the Lease
        real.admin.merge_patch(real.url("coordination.k8s.io/v1", "Lease", "vc-scheduler"),
                               {"spec": {"holderIdentity": "intruder"}})
        thread.join(10)
    finally:
        stop.set()
        thread.join(10)
    assert outcome == [1]  # run() returns 1: the term ends (run_terms then stands again as a candidate)
    assert scheduler.elector.lost.is_set()
    # shutting down did not "release" a Lease it no longer holds
    assert lease(real)["spec"]["holderIdentity"] == "intruder"


def test_a_deposed_leader_is_fenced_at_once_then_stands_again_without_exiting(real):
    """The lease is taken mid-term: from that moment the term's client writes nothing (as an
    exited process would not), the term ends, and the same process leads again once the
    intruder's lease has run out, scheduling from a fresh cache."""
    real.put(node("n1", pods=100))
    elector = real_elector(real, "a")
    terms: list[Any] = []

    def term(client: Any) -> int:
        scheduler = Scheduler(client, RecordingCache(), first_fit_cycle, ConfigFile(None, None, None),
                              period=0.05, elector=elector)
        terms.append((client, scheduler))
        return scheduler.run(stop)

    stop = threading.Event()
    outcome: list[int] = []
    thread = threading.Thread(target=lambda: outcome.append(run_terms(real.kube, elector, stop, term)), daemon=True)
    thread.start()
    try:
        eventually(lambda: terms and terms[0][1].ready.is_set(), what="the first term leading")
        real.admin.merge_patch(real.url("coordination.k8s.io/v1", "Lease", "vc-scheduler"),
                               {"spec": {"holderIdentity": "intruder"}})
        eventually(lambda: terms[0][0].fence.is_set(), what="the first term fenced")
        with pytest.raises(ApiError) as fenced:
            terms[0][0].create(real.url("v1", "Pod"), pod("late", real.namespace))
        assert fenced.value.reason == "Fenced"
        eventually(lambda: len(terms) == 2 and terms[1][1].ready.is_set(), timeout=30,
                   what="a second term leading once the intruder's lease expired")
        assert thread.is_alive() and not outcome  # never exited
        assert terms[1][1].cache is not terms[0][1].cache
        real.put(pod("after", real.namespace))
        eventually(lambda: real.pod("after")["spec"].get("nodeName") == "n1", what="the second term scheduling")
    finally:
        stop.set()
        thread.join(10)
    assert outcome == [0]


class HangingLeaseApi:
    """A narrow fake for what a real apiserver cannot do on request, and a fault proxy could
    only do in real time: API calls that hang for their whole timeout, measured on a fake clock.
    It keeps one Lease; once `hang` is set, every call uses up its whole timeout and fails."""

    def __init__(self) -> None:
        self.now = 0.0
        self.lease: dict[str, Any] | None = None
        self.hang = False
        self.writes: list[float] = []  # when each successful write arrived
        self.timeouts: list[tuple[float, float]] = []  # (sent at, timeout) of every call

    def clock(self) -> float:
        return self.now

    def request(self, method: str, url: str, query: Any = None, body: Any = None, content_type: Any = None,
                timeout: float = 30.0) -> dict[str, Any]:
        self.timeouts.append((self.now, timeout))
        if self.hang:
            self.now += timeout
            raise TimeoutError("read timed out")
        self.now += 0.01
        if method == "GET":
            if self.lease is None:
                raise ApiError(404, "NotFound", "leases not found")
            return copy.deepcopy(self.lease)
        self.writes.append(self.now)
        self.lease = dict(body, metadata=dict(body["metadata"], resourceVersion=str(len(self.writes))))
        return copy.deepcopy(self.lease)


def test_a_hung_renewal_cannot_stretch_leadership_past_the_renew_deadline():
    api = HangingLeaseApi()
    lost_at: list[float] = []
    candidate = LeaderElector(api, "caldera-system", "vc-scheduler", "a", lease_duration=15, renew_deadline=10,
                              retry_period=0.001, clock=api.clock, on_lost=lambda: lost_at.append(api.now))
    stop = threading.Event()
    try:
        assert candidate.acquire(stop)
        eventually(lambda: len(api.writes) >= 3, what="a few renewals")
        api.hang = True
        eventually(candidate.lost.is_set, what="leadership lost")
    finally:
        stop.set()
    last_write = api.writes[-1]
    assert lost_at and lost_at[0] <= last_write + 10  # a standby may take over 15 s after it saw that write
    assert not candidate.leading.is_set()
    hung = [(sent, timeout) for sent, timeout in api.timeouts if sent >= last_write]
    assert hung and all(sent + timeout <= last_write + 10 for sent, timeout in hung)  # no call outlives the deadline
