"""Structured fuzzing of every entry point that reads user data.

Whole manifests and configurations (strategies.py) go through `caldera simulate`, `caldera
validate`, the webhook's `review` and the informer-to-cache path with scheduling cycles. What
must hold: no crash (a traceback or exit 3 is a bug), exit codes 0/2 (simulate) and 0/1/2
(validate), the webhook always answers, and the cycles keep the scheduler's invariants: no node
over its allocatable, no gang bound below its minMember, no pod bound twice. Inputs that once
failed are kept as files in tests/data/regressions (test_total_parsing runs them).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from caldera.cli import main
from central.admission import DEFAULT_CONFIG
from central.admission.webhook import ClusterView, review
from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.jobs import expand_job
from central.model.objects import READY_STATUSES
from central.resources.vectors import EPSILON
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.feeder import CacheFeeder
from central.sim import simulate as simulation
from tests.fuzz import strategies as s
from tests.fuzz.conftest import FUZZ


class _Dumper(yaml.SafeDumper):
    pass


def dump(objects: list[Any]) -> str:
    return yaml.dump_all(objects, Dumper=_Dumper, allow_unicode=True)


def write(tmp_path_factory, text: str, name: str = "m.yaml") -> str:
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def one_line_error(err: str) -> bool:
    return "Traceback" not in err and err.count("\n") == 1


@contextmanager
def recorded_binds() -> Iterator[list[tuple[str, str]]]:
    """Every (pod, node) bind of the simulator's cycles, in order: its JSON merges the cycles'
    binds into one map, where a pod bound again in a later cycle would not show."""
    binds: list[tuple[str, str]] = []

    def cycle(*args: Any, **kwargs: Any) -> Any:
        result = run_cycle(*args, **kwargs)
        binds.extend(result.binds.items())
        return result

    with mock.patch.object(simulation, "run_cycle", cycle):
        yield binds


@FUZZ
@given(st.one_of(s.objects(), s.clusters()))
def test_simulate_exits_0_or_2_in_one_line(tmp_path_factory, capsys, objects):
    with recorded_binds() as binds:
        rc = main(["simulate", "--manifests", write(tmp_path_factory, dump(objects)), "--output", "json",
                   "--cycles", "2"])
    out, err = capsys.readouterr()
    event(f"simulate exit {rc}")
    assert rc in (0, 2), err
    if rc == 2:
        assert one_line_error(err), err
    else:
        event(f"simulate bound {'some' if binds else 'none'}")
        assert [pod for pod, times in Counter(pod for pod, _ in binds).items() if times > 1] == [], binds
        assert dict(binds) == json.loads(out)["binds"]  # the binds recorded are the run's


@FUZZ
@given(s.objects())
def test_validate_exits_0_1_or_2(tmp_path_factory, capsys, objects):
    rc = main(["validate", "--manifests", write(tmp_path_factory, dump(objects)), "--output", "json"])
    out, err = capsys.readouterr()
    event(f"validate exit {rc}")
    assert rc in (0, 1, 2), err
    if rc == 2:
        assert one_line_error(err), err


ROUTES = {"Job": "/jobs/validate", "Queue": "/queues/validate", "PodGroup": "/podgroups/validate",
          "Pod": "/pods/validate"}


@FUZZ
@given(s.objects(), st.sampled_from(["CREATE", "UPDATE"]),
       st.sampled_from([None, "alice", DEFAULT_CONFIG.scheduler_user]))
def test_webhook_answers_every_object(objects, operation, user):
    view = ClusterView(None)
    for obj in objects:
        if obj.get("kind") in ("Queue", "PodGroup") and isinstance(obj.get("metadata"), dict):
            view.apply(obj["kind"], "ADDED", obj)
    for obj in objects:
        route = ROUTES.get(obj.get("kind"), "/jobs/validate")
        request = {"uid": "u", "operation": operation, "object": obj, "userInfo": {"username": user},
                   "oldObject": objects[0] if operation == "UPDATE" else None}
        for path in (route, route.replace("validate", "mutate")):
            if path == "/pods/mutate":
                continue
            response = review(path, request, view, DEFAULT_CONFIG)
            event(f"webhook {'allowed' if response['allowed'] else 'denied'}")
            assert response["uid"] == "u" and isinstance(response["allowed"], bool)
            if not response["allowed"]:
                assert response["status"]["code"] == 400 and response["status"]["message"]


def feed(objects: list[Any]) -> tuple[ClusterCache, CacheFeeder]:
    """Objects as the informers would hand them over (a Job as its controller expands it)."""
    cache = ClusterCache()
    feeder = CacheFeeder(cache)
    order = {"Queue": 0, "Node": 1, "PodGroup": 2, "Pod": 3}
    expanded: list[Any] = []
    for obj in objects:
        if obj.get("kind") == "Job":
            try:
                podgroup, pods = expand_job(obj)
            except InputError:
                continue  # admission refuses it; the controller never expands it
            expanded += [podgroup, *pods]
        elif isinstance(obj.get("metadata"), dict) and isinstance(obj["metadata"].get("name"), str):
            expanded.append(obj)
    for obj in sorted(expanded, key=lambda o: order.get(o.get("kind"), 9)):
        if obj.get("kind") in order:
            feeder.handler(obj["kind"])("ADDED", json.loads(json.dumps(obj)) if _finite(obj) else obj)
    return cache, feeder


def _finite(obj: Any) -> bool:
    try:
        json.dumps(obj, allow_nan=False)
        return True
    except (ValueError, TypeError):
        return False


def check_invariants(cache: ClusterCache, bound_before: set[str], binds: dict[str, str]) -> None:
    assert not set(binds) & bound_before, "a pod bound twice"
    table = cache.table
    for name in set(binds.values()):
        row = cache.nodes[name].index
        assert np.all(table.used[row] <= table.alloc[row] + EPSILON), f"node {name} over its allocatable"
        assert table.pods[row] <= table.max_pods[row], f"node {name} over its pod count"
    for job in cache.jobs.values():
        if any(uid in binds for uid in job.tasks):
            ready = sum(t.status in READY_STATUSES for t in job.tasks.values())
            assert ready >= job.min_available, f"gang {job.uid} bound below minMember"


@FUZZ
@given(st.one_of(s.clusters(), s.clusters(), s.objects()), st.integers(2, 3))
def test_informer_to_cache_and_cycles_keep_the_invariants(objects, cycles):
    cache, feeder = feed(objects)
    conf = load_config(DEFAULT_CONF_YAML)
    bound: set[str] = {uid for uid, t in cache.tasks.items() if t.node}
    for _ in range(cycles):
        result = run_cycle(cache, conf)
        event(f"cycle bound {'some' if result.binds else 'none'}")
        check_invariants(cache, bound, result.binds)
        bound |= set(result.binds)
    assert all(isinstance(reason, str) and reason for reason in feeder.refused.values())


@FUZZ
@given(s.config(), s.objects())
def test_configurations_load_or_are_refused_in_one_line(tmp_path_factory, capsys, conf, objects):
    path = write(tmp_path_factory, yaml.safe_dump(conf, allow_unicode=True), "sched.conf")
    manifests = write(tmp_path_factory, dump([o for o in objects if o.get("kind") == "Node"] or [
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}]))
    rc = main(["simulate", "--config", path, "--manifests", manifests])
    err = capsys.readouterr().err
    event(f"config exit {rc}")
    assert rc in (0, 2), err
    if rc == 2:
        assert one_line_error(err), err
