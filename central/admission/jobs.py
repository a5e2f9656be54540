"""Admission of Volcano Jobs (batch.volcano.sh/v1alpha1): defaulting, then validation.

    mutate_job(job, config) -> dict                   the job with the webhook's defaults (a copy)
    validate_job(job, cluster, config, old) -> list   every problem as "<field.path>: <message>"

Defaults follow Volcano's mutating webhook, including its Go zero-value quirks: an unset or
0 `maxRetry` becomes 3 (job and task), an unset or 0 `minAvailable` becomes the sum of the
tasks' minAvailable, a task's unset minAvailable becomes minPartitions x partitionSize under
a partitionPolicy, else its replicas, a nameless task is
`default<i>`, hostNetwork pods get dnsPolicy ClusterFirstWithHostNet, and the svc/ssh
plugins are added for the frameworks that need them. One deliberate difference: a task
without `replicas` gets 1 (as `expand_job` assumes), not Go's 0.

Validation runs on the defaulted job. On create the queue must exist, be Open, not be root
and be a leaf; on update (`old` given) only minAvailable, task replicas / minAvailable and
priorityClassName may change. The operator's limits (config.AdmissionConfig) bound tasks
and replicas.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from central.admission import fields
from central.admission.cluster import ROOT, Cluster
from central.admission.config import DEFAULT_CONFIG, AdmissionConfig
from central.admission.fields import Problems, add, quote
from central.admission.policies import validate_policies
from central.admission.templates import validate_template, validate_topology_policy
from central.controllers.jobplugins import NEEDS, PLUGINS
from central.errors import InputError
from central.model.annotations import ALLOWED_NAMESPACES
from central.model.fields import list_at, map_at
from central.model.parse import parse_pod

DEFAULT_MAX_RETRY = 3
# Volcano's words for a forbidden update (its field names, which the messages keep verbatim).
UPDATABLE = "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec` and `PriorityClassName`"
TASKS_FIXED = "job updates may not add or remove tasks"
MIN_OVER_TOTAL = "job 'minAvailable' should not be greater than total replicas in tasks"


def mutate_job(job: Mapping[str, Any], config: AdmissionConfig = DEFAULT_CONFIG) -> dict[str, Any]:
    out = copy.deepcopy(dict(job))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    spec["queue"] = spec.get("queue") or "default"
    spec["schedulerName"] = spec.get("schedulerName") or config.scheduler_name
    spec["maxRetry"] = spec.get("maxRetry") or DEFAULT_MAX_RETRY
    tasks = spec.get("tasks")
    if isinstance(tasks, list):
        for i, task in enumerate(tasks):
            if isinstance(task, dict):
                _default_task(task, i)
        task_mins = [t.get("minAvailable") for t in tasks if isinstance(t, dict)]
        if not spec.get("minAvailable") and all(_is_int(m) for m in task_mins):
            spec["minAvailable"] = sum(task_mins)
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        for framework, needed in NEEDS.items():
            if framework in plugins:
                for name in needed:
                    plugins.setdefault(name, [])
    return out


def _default_task(task: dict[str, Any], index: int) -> None:
    task["name"] = task.get("name") or f"default{index}"
    task.setdefault("replicas", 0)  # Go reads an omitted int32 as 0 (omitempty drops a 0)
    partition = map_at(task, "partitionPolicy")
    if (
        task.get("minAvailable") is None
        and _is_int(partition.get("minPartitions"))
        and partition["minPartitions"] > 0
        and _is_int(partition.get("partitionSize"))
    ):
        task["minAvailable"] = partition["minPartitions"] * partition["partitionSize"]
    elif task.get("minAvailable") is None and _is_int(task["replicas"]):
        task["minAvailable"] = task["replicas"]
    task["maxRetry"] = task.get("maxRetry") or DEFAULT_MAX_RETRY
    pod_spec = (task.get("template") or {}).get("spec") if isinstance(task.get("template"), dict) else None
    if isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_job(
    job: Mapping[str, Any],
    cluster: Cluster,
    config: AdmissionConfig = DEFAULT_CONFIG,
    old: Mapping[str, Any] | None = None,
) -> Problems:
    problems: Problems = []
    meta = fields.mapping(problems, job.get("metadata"), "metadata") or {}
    name = fields.dns_label(problems, meta.get("name"), "metadata.name")
    spec = fields.mapping(problems, job.get("spec"), "spec")
    if spec is None:
        return problems
    min_available = fields.integer(problems, spec.get("minAvailable", 0), "spec.minAvailable")
    fields.integer(problems, spec.get("maxRetry", 0), "spec.maxRetry")
    if spec.get("ttlSecondsAfterFinished") is not None:
        fields.integer(problems, spec["ttlSecondsAfterFinished"], "spec.ttlSecondsAfterFinished")
    min_success = None
    if spec.get("minSuccess") is not None:
        min_success = fields.integer(problems, spec["minSuccess"], "spec.minSuccess", minimum=1)
    total = _validate_tasks(problems, spec, name, config)
    if total is not None:
        if min_available is not None and min_available > total:
            add(problems, "spec.minAvailable", f"{MIN_OVER_TOTAL} ({min_available} > {total})")
        if min_success is not None and min_success > total:
            add(problems, "spec.minSuccess", f"{min_success} must be <= the total replicas of all tasks ({total})")
        if total > config.max_replicas_per_job:
            add(
                problems,
                "spec.tasks",
                f"{total} replicas in all exceed the limit of {config.max_replicas_per_job} per job",
            )
    validate_policies(problems, spec.get("policies"), "spec.policies")
    _validate_plugins(problems, job, spec)
    _validate_volumes(problems, spec.get("volumes"))
    exclusive_tiers(problems, spec.get("networkTopology"), "spec.networkTopology")
    if old is None:
        queue_problems(problems, cluster, spec.get("queue"), "spec.queue", namespace_of(job))
    else:
        old_spec = old.get("spec")
        _validate_update(problems, spec, old_spec if isinstance(old_spec, Mapping) else {})
    fields.interpreted(problems, meta.get("annotations"), "Job")
    if not problems:
        _pods_are_readable(problems, job, spec)
    return problems


def _pods_are_readable(problems: Problems, job: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    """Each task's pods as the scheduler will parse them (one per task: they share a template)."""
    for i, task in enumerate(spec.get("tasks") or []):
        template = task.get("template") or {}
        where = f"spec.tasks[{i}].template."
        meta = fields.mapping(problems, template.get("metadata"), f"{where}metadata")
        if meta is None:
            continue
        fields.interpreted(problems, meta.get("annotations"), "Pod", where)
        pod = {"kind": "Pod", "metadata": {**meta, "name": "x", "namespace": namespace_of(job)},
               "spec": {**template.get("spec", {}), "schedulerName": spec.get("schedulerName")}}
        fields.readable(problems, parse_pod, pod, prefix=where)


def _validate_tasks(
    problems: Problems, spec: Mapping[str, Any], job_name: str | None, config: AdmissionConfig
) -> int | None:
    """Checks spec.tasks; returns the total replicas when every task's replicas is valid."""
    tasks = fields.sequence(problems, spec.get("tasks"), "spec.tasks")
    if tasks is None:
        return None
    if not tasks:
        add(problems, "spec.tasks", "No task specified in job spec")
        return None
    if len(tasks) > config.max_tasks_per_job:
        add(problems, "spec.tasks", f"{len(tasks)} tasks exceed the limit of {config.max_tasks_per_job} per job")
    names: dict[str, int] = {}
    total: int | None = 0
    for i, raw in enumerate(tasks):
        where = f"spec.tasks[{i}]"
        task = fields.mapping(problems, raw, where)
        if task is None:
            total = None
            continue
        name = fields.dns_label(problems, task.get("name"), f"{where}.name")
        if name is not None and name in names:
            add(problems, f"{where}.name", f"duplicated task name found: {quote(name)} (also spec.tasks[{names[name]}])")
        elif name is not None:
            names[name] = i
        replicas = fields.integer(
            problems, task.get("replicas", 0), f"{where}.replicas", maximum=config.max_replicas_per_task
        )
        task_min = fields.integer(problems, task.get("minAvailable", 0), f"{where}.minAvailable")
        if replicas is not None and task_min is not None and task_min > replicas:
            add(problems, f"{where}.minAvailable",
                f"'minAvailable' is greater than 'replicas' in task: {task_min} > {replicas}")
        fields.integer(problems, task.get("maxRetry", 0), f"{where}.maxRetry")
        if job_name and name and replicas:
            pod = f"{job_name}-{name}-{replicas - 1}"
            if len(pod) > fields.DNS_LABEL_MAX:
                add(
                    problems,
                    f"{where}.name",
                    f"pod name {quote(pod)} would be longer than {fields.DNS_LABEL_MAX} characters",
                )
        validate_template(problems, task.get("template"), f"{where}.template")
        validate_topology_policy(problems, task, where)
        _validate_partitions(problems, task, replicas, task_min, where)
        validate_policies(problems, task.get("policies"), f"{where}.policies")
        total = None if total is None or replicas is None else total + replicas
    _validate_depends_on(problems, tasks, names)
    return total


def _validate_partitions(
    problems: Problems, task: Mapping[str, Any], replicas: int | None, task_min: int | None, where: str
) -> None:
    partition = fields.mapping(problems, task.get("partitionPolicy"), f"{where}.partitionPolicy")
    if not partition:
        return
    path = f"{where}.partitionPolicy"
    exclusive_tiers(problems, partition.get("networkTopology"), f"{path}.networkTopology")
    total = fields.integer(problems, partition.get("totalPartitions"), f"{path}.totalPartitions", minimum=1)
    size = fields.integer(problems, partition.get("partitionSize"), f"{path}.partitionSize", minimum=1)
    minimum = fields.integer(problems, partition.get("minPartitions", 0), f"{path}.minPartitions")
    if total is None or size is None:
        return
    if replicas is not None and replicas != total * size:
        add(problems, f"{where}.replicas", f"{replicas} must equal totalPartitions x partitionSize ({total * size})")
    if minimum is not None and minimum > total:
        add(problems, f"{path}.minPartitions", f"{minimum} must be <= totalPartitions ({total})")
    if minimum and task_min is not None and task_min != minimum * size:
        add(
            problems, f"{where}.minAvailable", f"{task_min} must equal minPartitions x partitionSize ({minimum * size})"
        )


def _validate_depends_on(problems: Problems, tasks: list[Any], names: dict[str, int]) -> None:
    graph: dict[str, list[str]] = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping) or task.get("dependsOn") is None:
            continue
        where = f"spec.tasks[{i}].dependsOn"
        depends = fields.mapping(problems, task["dependsOn"], where)
        if depends is None:
            continue
        if depends.get("iteration") not in (None, "", "any", "all"):
            add(problems, f"{where}.iteration", f"must be 'any' or 'all', got {quote(depends['iteration'])}")
        for j, target in enumerate(fields.sequence(problems, depends.get("name"), f"{where}.name") or []):
            if not isinstance(target, str) or target not in names:
                add(
                    problems,
                    f"{where}.name[{j}]",
                    f"unknown task {quote(target)}: dependsOn must name tasks of this job",
                )
            else:
                graph.setdefault(str(task.get("name")), []).append(target)
    cycle = _find_cycle(graph)
    if cycle:
        add(problems, "spec.tasks", f"dependsOn does not form a DAG: {' -> '.join(cycle)}")


def _find_cycle(graph: dict[str, list[str]]) -> list[str]:
    """One cycle in `graph` as a path that returns to its start, or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str]:
        state[node] = 1
        path = path + [node]
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt, path)
                if found:
                    return found
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [])
            if found:
                return found
    return []


def _validate_plugins(problems: Problems, job: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    plugins = fields.mapping(problems, spec.get("plugins"), "spec.plugins")
    for name, args in (plugins or {}).items():
        if name not in PLUGINS:
            add(
                problems,
                f"spec.plugins.{name}",
                f"unable to find job plugin {quote(name)}; known plugins: {', '.join(PLUGINS)}",
            )
            continue
        if args is not None and not isinstance(args, list):
            add(problems, f"spec.plugins.{name}", "must be a list of arguments")
            continue
        try:
            plugin = PLUGINS[name](args)
        except InputError as err:
            add(problems, err.where, err.message)
            continue
        task_names = {str(t.get("name")) for t in list_at(spec, "tasks") if isinstance(t, Mapping)}
        if name == "mpi" and plugin.option("master") not in task_names:
            add(problems, "spec.plugins.mpi", f"the mpi master task {quote(plugin.option('master'))} is not among spec.tasks")
        if name == "ray" and plugin.option("head") not in task_names:
            add(problems, "spec.plugins.ray", f"the ray head task {quote(plugin.option('head'))} is not among spec.tasks")


def _validate_volumes(problems: Problems, raw: Any) -> None:
    seen: set[str] = set()
    for i, item in enumerate(fields.sequence(problems, raw, "spec.volumes") or []):
        where = f"spec.volumes[{i}]"
        volume = fields.mapping(problems, item, where)
        if volume is None:
            continue
        path = volume.get("mountPath")
        if not path:
            add(problems, f"{where}.mountPath", "should be at least 1 chars long: mountPath is required")
        elif path in seen:
            add(problems, f"{where}.mountPath", f"duplicated mountPath {quote(path)}")
        seen.add(str(path))
        has_claim, has_name = volume.get("volumeClaim") is not None, bool(volume.get("volumeClaimName"))
        if not has_claim and not has_name:
            add(problems, where, "either VolumeClaim or VolumeClaimName must be specified")
        elif has_claim and has_name:
            add(problems, where, "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
                                 "If you want to create a new PVC, you do not need to specify VolumeClaimName")
        elif has_name:
            fields.dns_label(problems, volume["volumeClaimName"], f"{where}.volumeClaimName", max_length=253)


def exclusive_tiers(problems: Problems, raw: Any, where: str) -> None:
    """A networkTopology (of a Job, a partition, a PodGroup or its subgroup): mode hard or soft,
    a tier by number (at least 1: HyperNode tiers start at 1; Volcano's schema lets 0 in, which
    no HyperNode can satisfy) or by name, not both."""
    topology = fields.mapping(problems, raw, where) or {}
    if topology.get("mode") not in (None, "hard", "soft"):
        add(problems, f"{where}.mode", f"must be hard or soft, got {quote(topology['mode'])}")
    if topology.get("highestTierAllowed") is not None:
        fields.integer(problems, topology["highestTierAllowed"], f"{where}.highestTierAllowed", minimum=1)
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName"):
        add(problems, where, "must not specify highestTierAllowed and highestTierName simultaneously")


def namespace_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


def queue_problems(problems: Problems, cluster: Cluster, queue: Any, where: str, namespace: str) -> None:
    """A job (or PodGroup of a job) may only go to an existing, Open, non-root leaf queue that
    takes jobs from its namespace."""
    if not isinstance(queue, str):
        add(problems, where, f"must be a queue name, got {quote(queue)}")
    elif queue not in cluster.queues:
        add(problems, where, f"unable to find job queue {quote(queue)}")
    elif queue == ROOT:
        add(problems, where, "can not submit job to root queue")
    elif cluster.state(queue) != "Open":
        add(
            problems,
            where,
            f"can only submit job to queue with state Open; queue {quote(queue)} is {cluster.state(queue)}",
        )
    elif cluster.children(queue):
        add(
            problems,
            where,
            f"can only submit job to a leaf queue; queue {quote(queue)} has child queues "
            f"{', '.join(cluster.children(queue))}",
        )
    elif (refusing := cluster.refusing_queue(queue, namespace)) is not None:
        add(problems, where, f"queue {quote(refusing)} does not take jobs from namespace {quote(namespace)} "
                             f"(its annotation {ALLOWED_NAMESPACES})")


def _validate_update(problems: Problems, new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    for key in sorted(set(new) | set(old), key=str):
        if key in ("minAvailable", "priorityClassName", "tasks"):
            continue
        if new.get(key) != old.get(key):
            add(problems, f"spec.{key}", UPDATABLE)
    new_tasks, old_tasks = new.get("tasks") or [], old.get("tasks") or []
    if not isinstance(new_tasks, list) or not isinstance(old_tasks, list):
        return  # reported by the checks of spec.tasks
    if len(new_tasks) != len(old_tasks):
        add(problems, "spec.tasks", TASKS_FIXED)
        return
    for i, (a, b) in enumerate(zip(new_tasks, old_tasks, strict=True)):
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            continue
        for key in sorted(set(a) | set(b), key=str):
            if key not in ("replicas", "minAvailable") and a.get(key) != b.get(key):
                add(problems, f"spec.tasks[{i}].{key}", UPDATABLE)
