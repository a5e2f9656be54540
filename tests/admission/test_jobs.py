"""Job admission: every bad input of Volcano's webhook (and our limits) is refused naming the field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.admission import AdmissionConfig, Cluster, admit
from central.admission.jobs import mutate_job
from tests.builders import container, job, queue, task

CLUSTER = Cluster.from_objects(
    [
        queue("closed", state="Closed"),
        queue("parent"),
        queue("child", parent="parent"),
    ]
)


def edited(edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    obj = job()
    edit(obj)
    return obj


def spec(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda j: j["spec"].update(values)


def in_task(i: int, **values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda j: j["spec"]["tasks"][i].update(values)


def pod_resources(resources: dict[str, Any], containers: list[dict[str, Any]] | None = None) -> Callable[[dict[str, Any]], None]:
    def edit(j: dict[str, Any]) -> None:
        pod = j["spec"]["tasks"][0]["template"]["spec"]
        pod["resources"] = resources
        if containers is not None:
            pod["containers"] = containers
    return edit


def policy(**p: Any) -> dict[str, Any]:
    return {"action": "RestartJob", **p}


BAD = [
    pytest.param(lambda j: j["spec"]["tasks"][0]["template"].setdefault("metadata", {}).update(
        annotations={"caldera.sh/cpuset": "0-3"}),
        "spec.tasks[0].template.metadata.annotations[caldera.sh/cpuset]: is set by the scheduler", id="pinned-template"),
    pytest.param(lambda j: j["spec"]["tasks"][1]["template"].setdefault("metadata", {}).update(
        annotations={"caldera.sh/numa-nodes": "0"}),
        "spec.tasks[1].template.metadata.annotations[caldera.sh/numa-nodes]: is set by the scheduler",
        id="numa-pinned-template"),
    pytest.param(spec(tasks=[]), "spec.tasks: No task specified in job spec", id="no-tasks"),
    pytest.param(spec(tasks="ps"), "spec.tasks: must be a list", id="tasks-not-a-list"),
    pytest.param(in_task(1, name="ps"), 'spec.tasks[1].name: duplicated task name found: "ps"', id="duplicate-task-name"),
    pytest.param(in_task(0, name="Bad_Name"), "spec.tasks[0].name:", id="task-name-not-dns"),
    pytest.param(
        in_task(1, minAvailable=3), "spec.tasks[1].minAvailable: 'minAvailable' is greater than 'replicas' in task: 3 > 2", id="task-min-over-replicas"
    ),
    pytest.param(in_task(0, replicas=-1), "spec.tasks[0].replicas: should be greater than or equal to 0", id="negative-replicas"),
    pytest.param(in_task(0, replicas="2"), "spec.tasks[0].replicas: must be an integer", id="replicas-not-int"),
    pytest.param(in_task(0, minAvailable=-1), "spec.tasks[0].minAvailable: should be greater than or equal to 0", id="negative-task-min"),
    pytest.param(in_task(0, maxRetry=-2), "spec.tasks[0].maxRetry: should be greater than or equal to 0", id="negative-task-max-retry"),
    pytest.param(spec(minAvailable=4), "spec.minAvailable: job 'minAvailable' should not be greater than total replicas in tasks (4 > 3)", id="min-over-total"),
    pytest.param(spec(minAvailable=-1), "spec.minAvailable: should be greater than or equal to 0", id="negative-min"),
    pytest.param(spec(maxRetry=-1), "spec.maxRetry: should be greater than or equal to 0", id="negative-max-retry"),
    pytest.param(spec(ttlSecondsAfterFinished=-5), "spec.ttlSecondsAfterFinished: should be greater than or equal to 0", id="negative-ttl"),
    pytest.param(spec(minSuccess=9), "spec.minSuccess: 9 must be <= the total replicas", id="min-success-over-total"),
    pytest.param(spec(minSuccess=0), "spec.minSuccess: should be greater than or equal to 1", id="min-success-zero"),
    pytest.param(
        spec(policies=[policy(event="PodFailed", exitCode=3)]),
        "spec.policies[0]: must not specify event and exitCode",
        id="event-and-exit-code",
    ),
    pytest.param(
        spec(policies=[policy()]), "spec.policies[0]: either event and exitCode should be specified", id="neither-event-nor-exit-code"
    ),
    pytest.param(
        spec(policies=[policy(exitCode=0)]),
        "spec.policies[0].exitCode: 0 is not a valid error code",
        id="exit-code-zero",
    ),
    pytest.param(
        spec(policies=[policy(exitCode=3), policy(exitCode=3)]),
        "spec.policies[1].exitCode: duplicate exitCode 3",
        id="duplicate-exit-code",
    ),
    pytest.param(
        spec(policies=[policy(event="PodFailed"), policy(event="PodFailed")]),
        'spec.policies[1].event: duplicate event PodFailed  across different policy',
        id="duplicate-event",
    ),
    pytest.param(
        spec(policies=[policy(events=["*", "PodFailed"])]), "spec.policies: if there's * here", id="star-with-others"
    ),
    pytest.param(
        spec(policies=[policy(event="*"), policy(event="PodEvicted")]),
        "spec.policies: if there's * here",
        id="star-across-policies",
    ),
    pytest.param(
        spec(policies=[policy(event="OutOfSync")]),
        'spec.policies[0].event: invalid policy event "OutOfSync"',
        id="internal-event",
    ),
    pytest.param(
        spec(policies=[policy(event="PodBored")]),
        'spec.policies[0].event: invalid policy event "PodBored"',
        id="unknown-event",
    ),
    pytest.param(
        spec(policies=[policy(event="PodFailed", action="SyncJob")]),
        'spec.policies[0].action: invalid policy action "SyncJob"',
        id="internal-action",
    ),
    pytest.param(
        spec(policies=[policy(event="PodFailed", timeout="ten minutes")]),
        "spec.policies[0].timeout: expected a duration like 90s",
        id="bad-timeout",
    ),
    pytest.param(
        in_task(1, policies=[policy(exitCode=0)]),
        "spec.tasks[1].policies[0].exitCode: 0 is not a valid error code",
        id="task-policy-exit-code-zero",
    ),
    pytest.param(spec(plugins={"gloo": []}), 'spec.plugins.gloo: unable to find job plugin "gloo"', id="unknown-plugin"),
    pytest.param(
        spec(plugins={"svc": ["--bogus"]}), 'spec.plugins.svc: unknown flag "--bogus"', id="unknown-plugin-flag"
    ),
    pytest.param(
        spec(plugins={"pytorch": ["--port=99999"]}),
        "spec.plugins.pytorch: flag --port must be a port number",
        id="bad-plugin-port",
    ),
    pytest.param(
        spec(plugins={"mpi": []}),
        'spec.plugins.mpi: the mpi master task "master" is not among spec.tasks',
        id="mpi-master-missing",
    ),
    pytest.param(
        spec(plugins={"ray": []}),
        'spec.plugins.ray: the ray head task "head" is not among spec.tasks',
        id="ray-head-missing",
    ),
    pytest.param(
        in_task(1, dependsOn={"name": ["ghost"]}),
        'spec.tasks[1].dependsOn.name[0]: unknown task "ghost"',
        id="depends-on-unknown-task",
    ),
    pytest.param(
        lambda j: (
            j["spec"]["tasks"][0].update(dependsOn={"name": ["worker"]}),
            j["spec"]["tasks"][1].update(dependsOn={"name": ["ps"]}),
        ),
        "spec.tasks: dependsOn does not form a DAG: ps -> worker -> ps",
        id="depends-on-cycle",
    ),
    pytest.param(
        in_task(0, dependsOn={"name": ["ps"]}),
        "spec.tasks: dependsOn does not form a DAG: ps -> ps",
        id="depends-on-self",
    ),
    pytest.param(
        in_task(1, dependsOn={"name": ["ps"], "iteration": "some"}),
        "spec.tasks[1].dependsOn.iteration",
        id="depends-on-bad-iteration",
    ),
    pytest.param(spec(queue="ghost"), 'spec.queue: unable to find job queue "ghost"', id="unknown-queue"),
    pytest.param(spec(queue="closed"), "spec.queue: can only submit job to queue with state Open", id="closed-queue"),
    pytest.param(spec(queue="root"), "spec.queue: can not submit job to root queue", id="root-queue"),
    pytest.param(
        spec(queue="parent"), 'spec.queue: can only submit job to a leaf queue; queue "parent"', id="non-leaf-queue"
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0]["template"]["spec"].update(containers=[container(requests={"cpu": "2x"})]),
        "spec.tasks[0].template.spec.containers[0].resources.requests.cpu: invalid quantity",
        id="bad-quantity",
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0]["template"]["spec"].update(containers=[container(requests={"memory": "-1Gi"})]),
        "spec.tasks[0].template.spec.containers[0].resources.requests.memory: must not be negative",
        id="negative-quantity",
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0]["template"]["spec"].update(
            containers=[container(requests={"cpu": "2"}, limits={"cpu": "1"})]
        ),
        "spec.tasks[0].template.spec.containers[0].resources.requests.cpu: 2 must be <= ",
        id="request-over-limit",
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0]["template"]["spec"].update(containers=[]),
        "spec.tasks[0].template.spec.containers: at least one container",
        id="no-containers",
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0]["template"]["spec"]["containers"][0].pop("image"),
        "spec.tasks[0].template.spec.containers[0].image: is required",
        id="no-image",
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0].update(template={"spec": "x"}),
        "spec.tasks[0].template.spec: must be a map",
        id="template-spec-not-a-map",
    ),
    pytest.param(
        lambda j: j["spec"]["tasks"][0]["template"]["spec"].update(restartPolicy="Sometimes"),
        'spec.tasks[0].template.spec.restartPolicy: must be Always, OnFailure or Never, got "Sometimes"',
        id="bad-restart-policy",
    ),
    pytest.param(lambda j: j["metadata"].update(name="a" * 60), "spec.tasks[1].name: pod name", id="pod-name-too-long"),
    pytest.param(lambda j: j["metadata"].pop("name"), "metadata.name: is required", id="no-name"),
    pytest.param(
        spec(volumes=[{"volumeClaimName": "data"}]), "spec.volumes[0].mountPath: should be at least 1 chars long", id="volume-no-mount-path"
    ),
    pytest.param(
        spec(volumes=[{"mountPath": "/d", "volumeClaimName": "a"}, {"mountPath": "/d", "volumeClaimName": "b"}]),
        'spec.volumes[1].mountPath: duplicated mountPath "/d"',
        id="volume-duplicate-mount-path",
    ),
    pytest.param(
        spec(volumes=[{"mountPath": "/d"}]), "spec.volumes[0]: either VolumeClaim or VolumeClaimName must be specified", id="volume-no-claim"
    ),
    pytest.param(
        spec(volumes=[{"mountPath": "/d", "volumeClaimName": "a", "volumeClaim": {}}]),
        "spec.volumes[0]: conflict: If you want to use an existing PVC, just specify VolumeClaimName.",
        id="volume-both-claims",
    ),
    pytest.param(
        spec(networkTopology={"highestTierAllowed": 1, "highestTierName": "t"}),
        "spec.networkTopology: must not specify highestTierAllowed and highestTierName",
        id="topology-both-tiers",
    ),
    pytest.param(
        in_task(
            0,
            topologyPolicy="single-numa-node",
            template={"spec": {"containers": [container(requests={"cpu": "1500m"})]}},
        ),
        "spec.tasks[0].template.spec.containers[0].resources.requests.cpu: must be a whole number of CPUs (> 0) with "
        'topologyPolicy "single-numa-node"',
        id="numa-fractional-cpu",
    ),
    pytest.param(
        in_task(0, topologyPolicy="best-effort", template={"spec": {"containers": [container(limits={"cpu": "0.5"})]}}),
        "spec.tasks[0].template.spec.containers[0].resources.limits.cpu: must be a whole number",
        id="numa-fractional-limit",
    ),
    pytest.param(
        in_task(0, topologyPolicy="fastest"), "spec.tasks[0].topologyPolicy: must be one of", id="numa-unknown-policy"
    ),
    pytest.param(
        in_task(1, partitionPolicy={"totalPartitions": 0, "partitionSize": 2}),
        "spec.tasks[1].partitionPolicy.totalPartitions: should be greater than or equal to 1",
        id="partition-total-zero",
    ),
    pytest.param(
        in_task(1, partitionPolicy={"totalPartitions": 2, "partitionSize": 2}),
        "spec.tasks[1].replicas: 2 must equal totalPartitions x partitionSize (4)",
        id="partition-replicas",
    ),
    pytest.param(
        in_task(
            1,
            replicas=4,
            minAvailable=3,
            partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1},
        ),
        "spec.tasks[1].minAvailable: 3 must equal minPartitions x partitionSize (2)",
        id="partition-min-available",
    ),
    pytest.param(
        in_task(1, partitionPolicy={"totalPartitions": 1, "partitionSize": 2,
                                    "networkTopology": {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}}),
        "spec.tasks[1].partitionPolicy.networkTopology: must not specify highestTierAllowed and highestTierName",
        id="partition-both-tiers",
    ),
    pytest.param(
        spec(networkTopology={"mode": "loose"}), 'spec.networkTopology.mode: must be hard or soft, got "loose"',
        id="topology-mode",
    ),
    pytest.param(
        spec(networkTopology={"mode": "hard", "highestTierAllowed": "two"}),
        'spec.networkTopology.highestTierAllowed: must be an integer',
        id="topology-tier-not-a-number",
    ),
    pytest.param(
        pod_resources({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        "spec.tasks[0].template.spec.resources.requests.cpu: 2 must be <= spec.tasks[0].template.spec.resources.limits.cpu (1)",
        id="pod-resources-requests-over-limits",
    ),
    pytest.param(
        pod_resources({"requests": {"cpu": "1"}}, containers=[container(requests={"cpu": "1"}), container("b", requests={"cpu": "1"})]),
        "spec.tasks[0].template.spec.resources.requests.cpu: 1 must be >= the containers' aggregate requests (2)",
        id="pod-resources-below-containers",
    ),
    pytest.param(
        pod_resources({"limits": {"memory": "1Gi"}}, containers=[container(limits={"memory": "2Gi"})]),
        "spec.tasks[0].template.spec.resources.limits.memory: 1Gi must be >= the limit of containers[0] (2Gi)",
        id="pod-resources-limit-below-a-container",
    ),
    pytest.param(
        pod_resources({"requests": {"nvidia.com/gpu": "1"}}),
        "spec.tasks[0].template.spec.resources.requests.nvidia.com/gpu: pod-level resources support only",
        id="pod-resources-unsupported",
    ),
    pytest.param(
        spec(tasks=[task(f"t{i}") for i in range(101)]),
        "spec.tasks: 101 tasks exceed the limit of 100",
        id="too-many-tasks",
    ),
    pytest.param(in_task(1, replicas=20_000), "spec.tasks[1].replicas: should be less than or equal to 10000", id="too-many-task-replicas"),
    pytest.param(
        spec(tasks=[task("a", 6000), task("b", 6000)]),
        "spec.tasks: 12000 replicas in all exceed the limit of 10000",
        id="too-many-job-replicas",
    ),
]


@pytest.mark.parametrize("edit, expected", BAD)
def test_bad_job_is_refused_naming_the_field(edit: Callable[[dict[str, Any]], Any], expected: str) -> None:
    review = admit(edited(edit), CLUSTER)
    assert not review.allowed
    assert any(e.startswith(expected) for e in review.errors), review.errors


def test_valid_twin_is_allowed() -> None:
    tasks = [
        task("ps", topologyPolicy="single-numa-node"),
        task("worker", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1}),
    ]
    tasks[0]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    review = admit(
        job(
            queue="child",
            tasks=tasks,
            policies=[policy(event="PodEvicted", timeout="5m"), policy(exitCode=137)],
            plugins={"mpi": ["--master=ps", "--worker=worker"]},
        ),
        CLUSTER,
    )
    assert review.allowed, review.errors


def test_every_problem_is_reported_at_once() -> None:
    bad = job(queue="ghost", tasks=[task("a", 1, minAvailable=2), task("a")], plugins={"nope": []})
    errors = admit(bad, CLUSTER).errors
    assert [e.split(":")[0] for e in errors] == [
        "spec.tasks[0].minAvailable",
        "spec.tasks[1].name",
        "spec.minAvailable",
        "spec.plugins.nope",
        "spec.queue",
    ]


def test_limits_are_configurable() -> None:
    config = AdmissionConfig(max_tasks_per_job=1, max_replicas_per_job=2)
    errors = admit(job(), CLUSTER, config).errors
    assert "spec.tasks: 2 tasks exceed the limit of 1 per job" in errors
    assert "spec.tasks: 3 replicas in all exceed the limit of 2 per job" in errors


DEFAULTS = [
    pytest.param({}, ("spec", "queue"), "default", id="queue"),
    pytest.param({}, ("spec", "schedulerName"), "volcano", id="scheduler-name"),
    pytest.param({}, ("spec", "maxRetry"), 3, id="max-retry"),
    pytest.param({"maxRetry": 0}, ("spec", "maxRetry"), 3, id="max-retry-zero-is-unset"),
    pytest.param({}, ("spec", "minAvailable"), 3, id="min-available-sum-of-tasks"),
    pytest.param({"minAvailable": 2}, ("spec", "minAvailable"), 2, id="min-available-kept"),
    pytest.param({}, ("spec", "tasks", 1, "minAvailable"), 2, id="task-min-available-replicas"),
    pytest.param({}, ("spec", "tasks", 1, "maxRetry"), 3, id="task-max-retry"),
    pytest.param(
        {"tasks": [task("w", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1})]},
        ("spec", "tasks", 0, "minAvailable"),
        2,
        id="task-min-available-from-partitions",
    ),
    pytest.param(
        {"plugins": {"mpi": []}}, ("spec", "plugins"), {"mpi": [], "svc": [], "ssh": []}, id="mpi-adds-svc-ssh"
    ),
    pytest.param({"plugins": {"pytorch": []}}, ("spec", "plugins"), {"pytorch": [], "svc": []}, id="pytorch-adds-svc"),
    pytest.param({"minAvailable": 0, "tasks": [{k: v for k, v in task("w", 1).items() if k != "replicas"}]},
                 ("spec", "tasks", 0, "replicas"), 0, id="omitted-replicas-are-zero-as-go-reads-them"),
    pytest.param(
        {"plugins": {"tensorflow": [], "svc": ["--disable-network-policy"]}},
        ("spec", "plugins"),
        {"tensorflow": [], "svc": ["--disable-network-policy"]},
        id="svc-args-kept",
    ),
]


@pytest.mark.parametrize("spec_values, path, expected", DEFAULTS)
def test_defaults(spec_values: dict[str, Any], path: tuple[Any, ...], expected: Any) -> None:
    value: Any = mutate_job(job(queue="", **spec_values))
    for key in path:
        value = value[key]
    assert value == expected


def test_defaults_nameless_task_and_host_network_dns() -> None:
    raw = job(tasks=[{"replicas": 1, "template": {"spec": {"hostNetwork": True, "containers": [container()]}}}])
    mutated = mutate_job(raw)
    assert mutated["spec"]["tasks"][0]["name"] == "default0"
    assert mutated["spec"]["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert raw["spec"]["tasks"][0].get("name") is None  # the input is not changed


UPDATES = [
    pytest.param(spec(minAvailable=2), None, id="min-available"),
    pytest.param(in_task(1, replicas=4), None, id="replicas"),
    pytest.param(spec(priorityClassName="high"), None, id="priority-class"),
    pytest.param(spec(queue="child"), "spec.queue: job updates may not change fields other than", id="queue"),
    pytest.param(spec(tasks=[task("ps")]), "spec.tasks: job updates may not add or remove tasks", id="remove-task"),
    pytest.param(
        in_task(0, template={"spec": {"containers": [container("other")]}}),
        "spec.tasks[0].template: job updates may not change fields other than",
        id="template",
    ),
]


@pytest.mark.parametrize("edit, expected", UPDATES)
def test_update_only_changes_scale_and_priority(edit: Callable[[dict[str, Any]], Any], expected: str | None) -> None:
    review = admit(edited(edit), CLUSTER, old=job())
    if expected is None:
        assert review.allowed, review.errors
    else:
        assert any(e.startswith(expected) for e in review.errors), review.errors


def test_update_ignores_queue_state() -> None:
    """A running job in a queue that has since closed can still be scaled."""
    old = job(queue="closed")
    new = copy.deepcopy(old)
    new["spec"]["tasks"][1]["replicas"] = 1
    assert admit(new, CLUSTER, old=old).allowed


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(deadline=None, max_examples=150)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "tasks",
                "minAvailable",
                "policies",
                "plugins",
                "queue",
                "volumes",
                "maxRetry",
                "minSuccess",
                "networkTopology",
                "ttlSecondsAfterFinished",
            ]
        ),
        json_values,
    )
)
def test_admission_never_crashes_on_junk(spec_values: dict[str, Any]) -> None:
    review = admit(job(**spec_values), CLUSTER)
    assert all(isinstance(e, str) and ": " in e for e in review.errors)


task_fields = st.sampled_from(
    [
        "name",
        "replicas",
        "minAvailable",
        "maxRetry",
        "policies",
        "dependsOn",
        "template",
        "topologyPolicy",
        "partitionPolicy",
    ]
)


@settings(deadline=None, max_examples=150)
@given(st.lists(st.dictionaries(task_fields, json_values, max_size=5), min_size=1, max_size=3))
def test_admission_never_crashes_on_junk_tasks(tasks: list[dict[str, Any]]) -> None:
    review = admit(job(tasks=tasks), CLUSTER)
    assert all(isinstance(e, str) and ": " in e for e in review.errors)
