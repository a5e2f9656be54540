"""The cache's per-queue sums (central.model.queuesums) follow every change to a job.

Each kept value has its invalidation rule; each test here changes one thing the rule names
and checks the sums against sums worked out from scratch, so dropping that part of the rule
makes the test fail.
"""

from datetime import datetime, timezone

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from central.framework.closing import queue_statuses
from central.framework.conf import DEFAULT_CONF_YAML
from central.framework.handle import Handle
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.objects import ALLOCATED_STATUSES, JobInfo, TaskStatus
from central.model.queuesums import held_row, less_gated, min_resources
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.builders import node, pod, podgroup, queue

CONF = load_config(DEFAULT_CONF_YAML)


def _from_scratch(cache: ClusterCache, jobs: dict[str, JobInfo]) -> dict[str, tuple[list[float], ...]]:
    out: dict[str, list[np.ndarray | int]] = {}
    phases: dict[str, dict[str, int]] = {}
    for job in jobs.values():
        counts = phases.setdefault(job.queue, {})
        counts[job.phase] = counts.get(job.phase, 0) + 1
        assert job.allocated is not None and job.pending_request is not None
        min_res = min_resources(job, cache.dims)
        held = held_row(job, min_res, job.allocated)
        held = cache.dims.zeros() if held is None else less_gated(job, held)
        terms = [job.allocated, job.pending_request, held, np.maximum(job.allocated - min_res, 0),
                 sum(job.counts.get(s, 0) for s in ALLOCATED_STATUSES)]
        sums = out.setdefault(job.queue, [cache.dims.zeros() for _ in range(4)] + [0])
        for i, term in enumerate(terms):
            sums[i] = sums[i] + term
    return {q: tuple([list(map(float, v)) for v in s[:4]] + [[float(s[4])], phases[q]]) for q, s in out.items()}


def _kept(cache: ClusterCache, jobs: dict[str, JobInfo]) -> dict[str, tuple[list[float], ...]]:
    sums = cache.queue_sums.sums(jobs, cache.dims)
    assert sums is not None
    return {q: (list(map(float, s.allocated)), list(map(float, s.pending)), list(map(float, s.held)),
                list(map(float, s.elastic)), [float(s.pods)], s.phases) for q, s in sums.items()}


def _cache() -> ClusterCache:
    cache = ClusterCache()
    cache.apply(node("n0", cpu="8", memory="16Gi"))
    for name in ("a", "b"):
        cache.apply(queue(name, weight=1))
    cache.apply(podgroup("g0", queue="a", min_member=2, minResources={"cpu": "3"}))
    cache.apply(podgroup("g1", queue="b", min_member=1))
    for i in range(3):
        cache.apply(pod(f"g0-{i}", "ml", group="g0", cpu="1"))
    cache.apply(pod("g1-0", "ml", group="g1", cpu="2"))
    return cache


def _jobs(cache: ClusterCache) -> dict[str, JobInfo]:
    return {uid: job for uid, job in cache.jobs.items() if job.has_podgroup}


def test_the_sums_are_those_summed_from_scratch():
    cache = _cache()
    jobs = _jobs(cache)
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert _kept(cache, jobs)["a"][1][0] == 3000.0  # three pending pods of 1 cpu (millicores)


def test_a_task_that_changes_status_changes_its_queue_s_sums():
    """The job's version moves with its tasks: allocated and pending follow."""
    cache = _cache()
    jobs = _jobs(cache)
    _kept(cache, jobs)
    cache.set_status(cache.tasks["ml/g0-0"], TaskStatus.RUNNING, "n0")
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert _kept(cache, jobs)["a"][0][0] == 1000.0


def test_a_phase_change_changes_what_the_queue_holds():
    """The phase is in the stamp: an admitted job holds its minResources."""
    cache = _cache()
    jobs = _jobs(cache)
    assert not any(_kept(cache, jobs)["a"][2])
    jobs["ml/g0"].phase = "Inqueue"
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert _kept(cache, jobs)["a"][2][0] == 3000.0


def test_min_available_is_in_the_stamp():
    """A running job holds its unallocated minResources only with minAvailable pods ready."""
    cache = _cache()
    jobs = _jobs(cache)
    cache.set_status(cache.tasks["ml/g0-0"], TaskStatus.RUNNING, "n0")
    jobs["ml/g0"].phase = "Running"
    assert _kept(cache, jobs)["a"][2][0] == 0.0  # one ready of two
    jobs["ml/g0"].min_available = 1
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert _kept(cache, jobs)["a"][2][0] == 2000.0


def test_a_podgroup_moved_to_another_queue_moves_its_terms():
    """A changed PodGroup is a new JobInfo (same version, same phase): its terms move."""
    cache = _cache()
    _kept(cache, _jobs(cache))
    cache.apply(podgroup("g0", queue="b", min_member=2, minResources={"cpu": "3"}))
    jobs = _jobs(cache)
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert set(_kept(cache, jobs)) == {"b"}


def test_a_job_that_leaves_the_session_takes_its_terms_out():
    cache = _cache()
    jobs = _jobs(cache)
    _kept(cache, jobs)
    del jobs["ml/g1"]
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert set(_kept(cache, jobs)) == {"a"}


def test_a_term_that_is_not_whole_means_summing_from_scratch():
    cache = _cache()
    cache.apply(pod("g1-1", "ml", group="g1", requests={"memory": "0.5"}))  # half a byte
    assert cache.queue_sums.sums(_jobs(cache), cache.dims) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["bind", "finish", "delete", "phase", "queue", "cycle"]),
                          st.integers(0, 5)), max_size=25))
def test_after_any_changes_the_sums_are_those_from_scratch(ops):
    cache = _cache()
    for i in range(3, 6):
        cache.apply(pod(f"g0-{i}", "ml", group="g0", cpu="1"))
    for op, n in ops:
        tasks = sorted(cache.tasks)
        task = cache.tasks[tasks[n % len(tasks)]] if tasks else None
        if op == "bind" and task is not None and task.status == TaskStatus.PENDING:
            cache.set_status(task, TaskStatus.RUNNING, "n0")
        elif op == "finish" and task is not None and task.status == TaskStatus.RUNNING:
            cache.set_status(task, TaskStatus.SUCCEEDED, "n0")
        elif op == "delete" and task is not None:
            cache.delete("Pod", task.namespace, task.name)
        elif op == "phase":
            job = cache.jobs["ml/g0"]
            job.phase = ["Pending", "Inqueue", "Running", ""][n % 4]
        elif op == "queue":
            cache.apply(podgroup(f"g{n % 2}", queue="ab"[n % 2 ^ 1 if n > 2 else n % 2], min_member=1 + n % 2))
        elif op == "cycle":
            run_cycle(cache, CONF, now=datetime(2026, 1, 1, tzinfo=timezone.utc))
        jobs = _jobs(cache)
        assert _kept(cache, jobs) == _from_scratch(cache, jobs)


def test_a_changed_podgroup_without_pods_is_worked_out_again():
    """A new JobInfo for the same PodGroup, without tasks: its identity (and the version the
    cache gives a new one) tells that minResources changed."""
    cache = _cache()
    cache.apply({**podgroup("g2", queue="a", minResources={"cpu": "1"}), "status": {"phase": "Inqueue"}})
    jobs = _jobs(cache)
    assert _kept(cache, jobs)["a"][2][0] == 1000.0
    cache.apply({**podgroup("g2", queue="a", minResources={"cpu": "2"}), "status": {"phase": "Inqueue"}})
    jobs = _jobs(cache)
    assert _kept(cache, jobs) == _from_scratch(cache, jobs)
    assert _kept(cache, jobs)["a"][2][0] == 2000.0


def test_after_the_plugins_open_the_session_s_sums_follow_its_changes():
    """One answer serves every plugin while they open; after that each ask sums anew."""
    cache = _cache()
    session = Session(cache, CONF, now=datetime(2026, 1, 1, tzinfo=timezone.utc))
    try:
        assert not session.handle.opening
        before = session.handle.queue_sums()
        assert before is not None and not before["a"].allocated.any()
        cache.set_status(cache.tasks["ml/g0-0"], TaskStatus.ALLOCATED, "n0")
        after = session.handle.queue_sums()
        assert after is not None and after["a"].allocated[0] == 1000.0
    finally:
        session.rollback()


def test_jobs_pending_with_and_without_a_phase_count_together():
    """A PodGroup's phase "" is Pending: the queue's status adds both kinds up."""
    cache = _cache()
    cache.apply(podgroup("g1", queue="a", min_member=1))
    jobs = _jobs(cache)
    jobs["ml/g1"].phase = ""  # as a JobInfo made in code may have it
    assert sorted(job.phase for job in jobs.values()) == ["", "Pending"]
    statuses = queue_statuses(cache.dims, cache.all_queues(), jobs, cache.queue_sums.sums(jobs, cache.dims))
    assert statuses["a"]["pending"] == 2
    assert queue_statuses(cache.dims, cache.all_queues(), jobs)["a"]["pending"] == 2  # summed from scratch too


CAPACITY = load_config('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
                       "- plugins: [{name: capacity, enableHierarchy: true}, {name: predicates}, {name: nodeorder}]\n")


def _quotas(cache: ClusterCache) -> dict[str, tuple[list[float], ...]]:
    session = Session(cache, CAPACITY, now=datetime(2026, 1, 1, tzinfo=timezone.utc))
    try:
        capacity = next(p for tier in session.tiers for p in tier if p.name == "capacity")
        return {name: (list(q.allocated), list(q.inqueue), list(q.elastic)) for name, q in capacity.quotas.items()}
    finally:
        session.rollback()


def test_capacity_opens_on_the_kept_sums_with_the_figures_job_by_job_gives(monkeypatch):
    """Each queue's allocated, inqueue and elastic, with its children's rolled up (hierarchy),
    from the cache's sums and from the jobs one by one (the form used where sums are not exact)."""
    cache = _cache()
    cache.apply(queue("a1", parent="a", weight=1))
    cache.apply({**podgroup("g2", queue="a1", min_member=1, minResources={"cpu": "2"}), "status": {"phase": "Inqueue"}})
    cache.apply({**podgroup("g0", queue="a", min_member=2, minResources={"cpu": "3"}), "status": {"phase": "Running"}})
    for name in ("ml/g0-0", "ml/g0-1"):
        cache.set_status(cache.tasks[name], TaskStatus.RUNNING, "n0")
    kept = _quotas(cache)
    monkeypatch.setattr(Handle, "queue_sums", lambda self, changed=None: None)  # as where sums are not exact
    assert _quotas(cache) == kept
    assert kept["a"][0][0] == 2000.0 and kept["a"][1][0] == 3000.0  # a1's 2 CPUs admitted count in a
