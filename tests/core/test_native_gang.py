"""Kubernetes' own gang API (scheduling.k8s.io/v1beta1 PodGroup) read as PodGroups: the
translation, the pods that name a group, the precedence of Volcano's PodGroups, a cycle that
binds a native gang whole or not at all, and the condition written back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from central.controllers.podgroups import podgroup_for_pod
from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.model.nativegang import as_podgroup, initially_scheduled, pod_view
from central.model.parse import GROUP_NAME
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.feeder import CacheFeeder
from central.testing import RecordingSink
from tests.builders import node, pod, podgroup, queue

NATIVE = "scheduling.k8s.io/v1beta1"


def native_group(name: str, namespace: str = "ml", *, min_count: int | None = 2, basic: bool = False,
                 annotations: dict[str, str] | None = None, generation: int = 1, **spec: Any) -> dict[str, Any]:
    """A native PodGroup as the API server serves it: a gang of `min_count` (or basic)."""
    policy: dict[str, Any] = {"basic": {}} if basic else {"gang": {"minCount": min_count}}
    return {"apiVersion": NATIVE, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "generation": generation,
                         **({"annotations": annotations} if annotations else {})},
            "spec": {"schedulingPolicy": policy, **spec}}


def member(name: str, group: str, cpu: str = "2", **kw: Any) -> dict[str, Any]:
    """A plain pod of Caldera's scheduler that names native PodGroup `group`."""
    return pod(name, "ml", cpu=cpu, schedulingGroup={"podGroupName": group}, **kw)


def test_a_gang_min_count_is_min_member_and_the_queue_comes_from_the_annotation():
    read = as_podgroup(native_group("train", min_count=3, priorityClassName="high",
                                    annotations={"scheduling.volcano.sh/queue-name": "research"}))
    assert read["spec"] == {"minMember": 3, "queue": "research", "priorityClassName": "high"}
    assert read["metadata"]["name"] == "train" and read["metadata"]["namespace"] == "ml"
    assert read["status"] == {"phase": "Pending", "conditions": []}


def test_without_the_annotation_the_queue_is_default_and_basic_is_one_pod_at_a_time():
    assert as_podgroup(native_group("web", basic=True))["spec"] == {"minMember": 1, "queue": "default"}


@pytest.mark.parametrize("policy, where", [
    ({}, "spec.schedulingPolicy: one of basic or gang is required"),
    ({"basic": {}, "gang": {"minCount": 2}}, "spec.schedulingPolicy: exactly one of basic or gang"),
    ({"gang": {"minCount": 0}}, "spec.schedulingPolicy.gang.minCount: must be >= 1"),
    ({"gang": {"minCount": "two"}}, "spec.schedulingPolicy.gang.minCount: expected an integer"),
])
def test_a_policy_the_api_would_refuse_names_the_field(policy, where):
    bad = native_group("x")
    bad["spec"]["schedulingPolicy"] = policy
    with pytest.raises(InputError, match=where.replace(".", r"\.")):
        as_podgroup(bad)


def test_a_pod_that_names_a_native_group_is_seen_in_it_and_the_pod_is_left_alone():
    original = member("w-0", "train")
    kept = copy.deepcopy(original)
    assert pod_view(original)["metadata"]["annotations"][GROUP_NAME] == "train"
    assert original == kept
    named = member("w-1", "train", annotations={GROUP_NAME: "volcano-group"})
    assert pod_view(named) is named  # Volcano's annotation, where a pod has one, counts
    plain = pod("p", "ml")
    assert pod_view(plain) is plain


def fed(*objects: dict[str, Any], native: bool = True) -> tuple[ClusterCache, CacheFeeder]:
    cache = ClusterCache()
    feeder = CacheFeeder(cache, native=native)
    for obj in (queue("root"), queue("default"), node("n1", cpu="4"), node("n2", cpu="4"), *objects):
        feeder.on_event("ADDED", copy.deepcopy(obj))
    return cache, feeder


def cycle(cache: ClusterCache) -> RecordingSink:
    sink = RecordingSink()
    run_cycle(cache, load_config(DEFAULT_CONF_YAML, "default"), sink)
    return sink


def test_a_native_gang_that_fits_is_bound_whole_and_one_that_does_not_binds_nothing():
    fits = [member(f"fits-{i}", "fits") for i in range(3)]  # 3 x 2 CPUs on 2 x 4 CPUs
    cache, _ = fed(native_group("fits", min_count=3), *fits)
    sink = cycle(cache)
    assert sorted(key for key, _ in sink.of("bind")) == ["ml/fits-0", "ml/fits-1", "ml/fits-2"]

    big = [member(f"big-{i}", "big", cpu="3") for i in range(3)]  # 3 x 3 CPUs: two fit, the gang does not
    cache, _ = fed(native_group("big", min_count=3), *big)
    sink = cycle(cache)
    assert sink.of("bind") == []
    status = dict(sink.of("podgroup"))["ml/big"]
    condition = initially_scheduled(status, native_group("big", min_count=3), "2026-01-01T00:00:00Z")
    assert condition is not None and condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("1/3 tasks in gang unschedulable: pod group is not ready")


def test_pods_of_a_native_group_are_plain_pods_when_it_is_not_read():
    # not watched then: only the pods reach the cache
    cache, _ = fed(member("a", "pair", cpu="3"), member("b", "pair", cpu="3"), native=False)
    assert "ml/pair" not in cache.jobs
    assert len(cycle(cache).of("bind")) == 2  # each its own job: no gang without the flag


def test_min_count_below_the_pods_binds_the_pods_that_fit():
    pods = [member(f"e-{i}", "elastic", cpu="3") for i in range(3)]  # two fit
    cache, _ = fed(native_group("elastic", min_count=2), *pods)
    assert len(cycle(cache).of("bind")) == 2


def test_a_volcano_podgroup_of_the_same_name_takes_precedence_until_it_is_deleted():
    cache, feeder = fed(podgroup("train", "ml", min_member=5), member("w-0", "train"))
    feeder.on_event("ADDED", native_group("train", min_count=1))
    assert cache.jobs["ml/train"].min_available == 5
    assert "precedence" in feeder.refused["PodGroup ml/train"]
    feeder.on_event("DELETED", podgroup("train", "ml", min_member=5))
    assert cache.jobs["ml/train"].min_available == 1  # the native one, read in its place
    assert "PodGroup ml/train" not in feeder.refused
    feeder.on_event("DELETED", native_group("train"))
    assert not cache.jobs["ml/train"].has_podgroup  # its pod waits for a group, as with Volcano's


def test_a_volcano_podgroup_deleted_beside_an_unreadable_native_one_leaves_the_cache():
    cache, feeder = fed(podgroup("train", "ml", min_member=5))
    bad = native_group("train")
    bad["spec"]["schedulingPolicy"] = {}
    feeder.on_event("ADDED", bad)
    feeder.on_event("DELETED", podgroup("train", "ml", min_member=5))
    assert "ml/train" not in cache.jobs


def test_the_phase_the_scheduler_gave_a_native_group_survives_an_update_of_it():
    pods = [member(f"w-{i}", "train", cpu="3") for i in range(3)]  # 2 fit, minCount 3: admitted, not placed
    cache, feeder = fed(native_group("train", min_count=3), *pods)
    cycle(cache)
    assert cache.jobs["ml/train"].phase == "Inqueue"
    updated = native_group("train", min_count=3, generation=2)
    updated["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False"}]}
    feeder.on_event("MODIFIED", updated)
    job = cache.jobs["ml/train"]
    assert job.phase == "Inqueue" and [c["type"] for c in job.conditions] == ["Unschedulable"]
    assert len(job.tasks) == 3


def condition(status: str, reason: str, message: str = "", when: str = "2026-01-01T00:00:00Z",
              generation: int = 1) -> dict[str, Any]:
    return {"type": "PodGroupInitiallyScheduled", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": when, "observedGeneration": generation}


def volcano(kind: str, message: str = "", phase: str = "Inqueue") -> dict[str, Any]:
    return {"phase": phase, "conditions": [{"type": kind, "status": "True", "reason": "r", "message": message}]}


def test_the_condition_is_kube_schedulers_and_is_written_only_when_it_changes():
    group = native_group("g", generation=3)
    now = "2026-02-02T00:00:00Z"
    assert initially_scheduled({"phase": "Pending", "conditions": []}, group, now) is None  # nothing tried yet
    assert initially_scheduled(volcano("Unschedulable", "1/2 tasks in gang unschedulable"), group, now) == \
        condition("False", "Unschedulable", "1/2 tasks in gang unschedulable", now, 3)
    assert initially_scheduled(volcano("Scheduled"), group, now) == condition("True", "Scheduled", "", now, 3)
    assert initially_scheduled({"phase": "Running", "conditions": []}, group, now)["status"] == "True"

    group["status"] = {"conditions": [condition("False", "Unschedulable", "old", generation=3)]}
    changed = initially_scheduled(volcano("Unschedulable", "new"), group, now)
    assert changed is not None and changed["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # the status stayed
    assert initially_scheduled(volcano("Unschedulable", "old"), group, now) is None

    group["status"] = {"conditions": [condition("True", "Scheduled", generation=3)]}
    assert initially_scheduled(volcano("Unschedulable", "evicted since"), group, now) is None  # True is terminal
    assert initially_scheduled(volcano("Scheduled"), group, now) is None


def test_a_long_message_is_cut_to_what_a_condition_holds():
    written = initially_scheduled(volcano("Unschedulable", "x" * 40000), native_group("g"), "2026-01-01T00:00:00Z")
    assert written is not None and len(written["message"]) == 32768


def test_the_podgroup_controller_leaves_a_pod_of_a_native_group_in_it():
    assert podgroup_for_pod(member("w-0", "train")) is None
    assert podgroup_for_pod(pod("plain", "ml")) is not None
