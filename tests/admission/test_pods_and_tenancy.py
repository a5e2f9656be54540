"""The pods webhook guards what the scheduler and the agent read; queues say who may submit."""

from __future__ import annotations

from typing import Any

import pytest

from central.admission import DEFAULT_CONFIG, Cluster, admit
from central.admission.pods import validate_pod
from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.builders import job, node, pod, podgroup, queue

SCHEDULER = DEFAULT_CONFIG.scheduler_user
OWNER = "alice"


@pytest.mark.parametrize("annotations, cpu, expected", [
    pytest.param({}, "1e999999999", "spec.containers[0].resources.requests.cpu: invalid quantity", id="huge-quantity"),
    pytest.param({}, float("nan"), "spec.containers[0].resources.requests.cpu: invalid quantity nan", id="nan"),
    pytest.param({"volcano.sh/numa-topology-policy": "fastest"}, "1",
                 "metadata.annotations[volcano.sh/numa-topology-policy]: unknown value", id="numa-policy"),
    pytest.param({"volcano.sh/gpu-index": "0,²"}, "1", "metadata.annotations[volcano.sh/gpu-index]", id="gpu-index"),
    pytest.param({"volcano.sh/task-priority": "9" * 40}, "1", "metadata.annotations[volcano.sh/task-priority]",
                 id="task-priority"),
    pytest.param({"volcano.sh/qos-level": "gold"}, "1", "metadata.annotations[volcano.sh/qos-level]", id="qos-level"),
    pytest.param({"volcano.sh/jdb-min-available": "0"}, "1", "metadata.annotations[volcano.sh/jdb-min-available]",
                 id="jdb-zero"),
])
def test_scheduler_pods_with_unreadable_fields_are_refused(annotations, cpu, expected):
    review = admit(pod(namespace="ml", annotations=annotations, cpu=cpu), Cluster(), user=OWNER)
    assert not review.allowed and any(e.startswith(expected) for e in review.errors), review.errors


def test_other_schedulers_pods_pass_untouched():
    other = pod(namespace="ml", annotations={"volcano.sh/qos-level": "gold"}, scheduler="default-scheduler")
    assert validate_pod(other, user=OWNER) == []


@pytest.mark.parametrize("old, new, user, allowed", [
    pytest.param(None, {"caldera.sh/cpuset": "0-3"}, OWNER, False, id="owner-creates-pinned"),
    pytest.param(None, {"caldera.sh/cpuset": "0-3"}, SCHEDULER, True, id="scheduler-pins"),
    pytest.param({}, {"caldera.sh/cpuset": "4-7"}, OWNER, False, id="owner-pins-later"),
    pytest.param({"caldera.sh/cpuset": "0-3"}, {"caldera.sh/cpuset": "4-7"}, OWNER, False, id="owner-moves-pin"),
    pytest.param({"caldera.sh/cpuset": "0-3"}, {}, OWNER, False, id="owner-unpins"),
    pytest.param({"caldera.sh/cpuset": "0-3"}, {"caldera.sh/cpuset": "0-3", "x": "y"}, OWNER, True,
                 id="owner-edits-other-annotations"),
    pytest.param(None, {"caldera.sh/numa-nodes": "0"}, None, False, id="unknown-user"),
    pytest.param(None, {"caldera.sh/cpuset": "0-99999999"}, SCHEDULER, False, id="even-the-scheduler-within-bounds"),
])
def test_only_the_scheduler_pins_cpus(old, new, user, allowed):
    # any scheduler name: a pod of another scheduler must not pin either (the agent would obey)
    before = None if old is None else pod(namespace="ml", annotations=old, scheduler="default-scheduler")
    after = pod(namespace="ml", annotations=new, scheduler="default-scheduler")
    review = admit(after, Cluster(), old=before, user=user)
    assert review.allowed == allowed, review.errors
    if not allowed and user != SCHEDULER:
        assert any("may be set only by the scheduler" in e for e in review.errors), review.errors


# --- queue tenancy: a queue takes Jobs and PodGroups only from the namespaces it names -------

def tenant_queue(name: str, allowed: str, parent: str | None = None) -> dict[str, Any]:
    return queue(name, parent=parent, annotations={"caldera.sh/allowed-namespaces": allowed})


CLUSTER = Cluster.from_objects([
    tenant_queue("team-a", "team-a, shared"), tenant_queue("parent", "team-b"), queue("open"),
    tenant_queue("leaf", "*", parent="parent"),
    {"kind": "Namespace",
     "metadata": {"name": "intruder", "annotations": {"scheduling.volcano.sh/queue-name": "team-a"}}},
])


@pytest.mark.parametrize("obj, allowed", [
    pytest.param(job(queue="team-a") | {"metadata": {"name": "j", "namespace": "team-a"}}, True, id="job-own-ns"),
    pytest.param(job(queue="team-a") | {"metadata": {"name": "j", "namespace": "shared"}}, True, id="job-listed-ns"),
    pytest.param(job(queue="team-a") | {"metadata": {"name": "j", "namespace": "intruder"}}, False, id="job-other-ns"),
    pytest.param(job(queue="open") | {"metadata": {"name": "j", "namespace": "intruder"}}, True,
                 id="unrestricted-queue"),
    pytest.param(job(queue="leaf") | {"metadata": {"name": "j", "namespace": "intruder"}}, False,
                 id="ancestor-restricts"),
    pytest.param(job(queue="leaf") | {"metadata": {"name": "j", "namespace": "team-b"}}, True, id="ancestor-admits"),
    pytest.param(podgroup("pg", "intruder", queue="team-a"), False, id="podgroup-other-ns"),
    pytest.param(podgroup("pg", "intruder", queue=None), False, id="namespace-annotation-names-a-foreign-queue"),
    pytest.param(podgroup("pg", "team-a", queue="team-a"), True, id="podgroup-own-ns"),
])
def test_queues_take_jobs_only_from_their_namespaces(obj, allowed):
    review = admit(obj, CLUSTER)
    assert review.allowed == allowed, review.errors
    if not allowed:
        assert any("does not take" in e and "caldera.sh/allowed-namespaces" in e for e in review.errors), review.errors


@pytest.mark.parametrize("value", ["", "Team_A", "a,,b,UPPER", "x" * 70])
def test_a_malformed_tenant_list_is_refused(value):
    review = admit(tenant_queue("q", value), Cluster())
    assert not review.allowed and any("caldera.sh/allowed-namespaces" in e for e in review.errors), review.errors


def test_the_scheduler_also_refuses_a_job_in_a_foreign_queue():
    """A PodGroup that got past admission (created before the annotation was set) is not scheduled."""
    cache = ClusterCache()
    for obj in [
        node("n1", cpu="8", memory="8Gi", pods=None),
        tenant_queue("team-a", "team-a"),
        *(podgroup(f"pg-{ns}", ns, queue="team-a") for ns in ("team-a", "intruder")),
        *(pod(f"p-{ns}", ns, group=f"pg-{ns}") for ns in ("team-a", "intruder")),
    ]:
        cache.apply(obj)
    result = run_cycle(cache, load_config(DEFAULT_CONF_YAML))
    assert set(result.binds) == {"team-a/p-team-a"}


def test_a_podgroup_in_a_closed_queue_may_still_be_resized():
    cluster = Cluster.from_objects([queue("shut", state="Closed")])
    before = podgroup("pg", "ns", queue="shut")
    assert not admit(before, cluster).allowed  # no new PodGroups in a closed queue...
    resized = podgroup("pg", "ns", queue="shut") | {"spec": {"minMember": 3, "queue": "shut"}}
    assert admit(resized, cluster, old=before).allowed  # ...but the ones there may change
    moved = podgroup("pg", "ns", queue="shut") | {"spec": {"minMember": 1, "queue": "nosuch"}}
    assert not admit(moved, cluster, old=before).allowed
