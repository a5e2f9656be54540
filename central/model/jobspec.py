"""A Volcano Job (batch.volcano.sh/v1alpha1) parsed once into a typed, immutable spec.

    parse_job(job, limits) -> JobSpec     InputError names the field (`spec.tasks[1].replicas`)
    job_spec(job) -> JobSpec              the same, parsed once per (uid, generation, annotations, labels)

Everything the job controller and the expansion into PodGroup and pods read from a Job is
here, checked and defaulted once, so no code further on reads the raw dict again. Defaults
are the admission webhook's where a job skipped it (a manifest fed to `simulate`): a task
without a name is `default<i>`, one without replicas has 1, its minAvailable is its replicas,
the job's minAvailable is the sum of its tasks', maxRetry (job and task) 3.

Parts the controller passes on unread stay as they are written (pod templates, lifecycle
policies, plugin arguments, `networkTopology`), as copies, so the spec never shares a dict
with the object it came from. A new Job field is one more attribute here and one line in
`parse_job`.

How `job_spec` knows the spec did not change: an entry belongs to one spec map object (held,
so its id is not reused) read with the same name, namespace, uid, `metadata.generation` and
passed-on annotations. The reconciles a job gets from pod events see the same object, so
they parse nothing. A new object (a watch event, a status write) is parsed again; so is a
spec changed in place, where the API's generation moves with every spec change (the Job CRD
has a status subresource). Keying on uid and generation alone is sound on a cluster, not in
simulations and tests, which make many jobs with the same name, uid and generation.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from central.errors import InputError
from central.model.fields import metadata, typed

DEFAULT_SCHEDULER = "volcano"
DEFAULT_MAX_RETRY = 3
# Job annotations Volcano passes on to its PodGroup and pods.
CARRIED_ANNOTATIONS = frozenset({
    "volcano.sh/preemptable", "volcano.sh/revocable-zone", "volcano.sh/jdb-min-available",
    "volcano.sh/jdb-max-unavailable", "volcano.sh/cooldown-time", "volcano.sh/numa-topology-policy",
    "volcano.sh/sla-waiting-time", "sla-waiting-time", "volcano.sh/task-topology-affinity",
    "volcano.sh/task-topology-anti-affinity", "volcano.sh/task-topology-task-order",
})


@dataclass(frozen=True)
class JobLimits:
    """How many pods one Job may expand to. Volcano bounds neither (a 1 KB job can ask for
    10^9 pods); admission refuses jobs beyond these, and expand_job never builds more, so a
    job that bypassed admission (a manifest in `simulate`) costs no more than an admitted one."""

    max_tasks: int = 100
    max_replicas_per_task: int = 10_000
    max_replicas: int = 10_000  # all tasks together


DEFAULT_LIMITS = JobLimits()


@dataclass(frozen=True)
class Claim:
    """One entry of `spec.volumes`: a PVC mounted into every pod."""

    name: str  # `volumeClaimName`, or `<job>-volume-<i>` for a claim the controller creates
    mount_path: str
    create: Mapping[str, Any] | None  # the PVC spec to create; None for a named, existing claim


@dataclass(frozen=True)
class TaskSpec:
    name: str
    index: int  # position in spec.tasks
    replicas: int
    min_available: int  # default: replicas
    declares_min_available: bool  # written in the spec (checked per task when the job needs all its pods)
    max_retry: int  # container restarts that make TaskFailed
    depends_on: tuple[str, ...]
    depends_on_any: bool  # `dependsOn.iteration: any`: one named task ready is enough
    policies: tuple[Mapping[str, Any], ...]  # the task's, then the job's: the order they are tried in
    template: Mapping[str, Any]  # the pod template, copied into each pod
    partition: Mapping[str, Any] | None = None  # partitionPolicy (admission checked its numbers)


@dataclass(frozen=True)
class JobSpec:
    namespace: str
    name: str
    uid: str
    carried: Mapping[str, str]  # annotations passed on to the pods
    annotations: Mapping[str, str]  # all the job's annotations and labels: Volcano copies them onto its PodGroup
    labels: Mapping[str, str]
    queue: str
    scheduler_name: str
    priority_class: str  # "" when none
    tasks: tuple[TaskSpec, ...]
    min_available: int
    min_success: int | None
    max_retry: int
    ttl_after_finished: int | None
    plugins: Mapping[str, Any]  # `spec.plugins`: name -> argument list, parsed by central.controllers.jobplugins
    claims: tuple[Claim, ...]
    network_topology: Mapping[str, Any] | None  # passed through, unread by the controller
    policies: tuple[Mapping[str, Any], ...] = ()  # the job's own, for events of the whole job (its PodGroup)
    running_estimate: str | None = None  # `spec.runningEstimate` as written (a Go duration); Volcano never reads it

    @property
    def replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def task(self, name: str) -> TaskSpec | None:
        return next((t for t in self.tasks if t.name == name), None)


def parse_job(job: Mapping[str, Any], limits: JobLimits = DEFAULT_LIMITS) -> JobSpec:
    namespace, name = metadata(job, namespaced=True)
    spec = job.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError("spec", "is required")
    raw_tasks = spec.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise InputError("spec.tasks", "a job needs at least one task")
    if len(raw_tasks) > limits.max_tasks:
        raise InputError("spec.tasks", f"{len(raw_tasks)} tasks exceed the limit of {limits.max_tasks} per job")
    job_policies = _policies(spec.get("policies"), "spec.policies")
    tasks: list[TaskSpec] = []
    for i, raw in enumerate(raw_tasks):
        tasks.append(_task(raw, i, job_policies, limits, sum(t.replicas for t in tasks)))
    plugins = typed(spec.get("plugins") or {}, Mapping, "spec.plugins")
    topology = spec.get("networkTopology")
    return JobSpec(
        namespace=namespace,
        name=name,
        uid=str(job["metadata"].get("uid") or ""),
        carried=_carried(job),
        annotations=_strings(job, "annotations"),
        labels=_strings(job, "labels"),
        queue=typed(spec.get("queue") or "default", str, "spec.queue"),
        scheduler_name=typed(spec.get("schedulerName") or DEFAULT_SCHEDULER, str, "spec.schedulerName"),
        priority_class=typed(spec.get("priorityClassName") or "", str, "spec.priorityClassName"),
        tasks=tuple(tasks),
        min_available=_count(spec.get("minAvailable", sum(t.min_available for t in tasks)), "spec.minAvailable"),
        min_success=_optional_count(spec.get("minSuccess"), "spec.minSuccess"),
        max_retry=_count(spec.get("maxRetry") or DEFAULT_MAX_RETRY, "spec.maxRetry"),
        ttl_after_finished=_optional_count(spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished"),
        plugins=clone(plugins),
        claims=_claims(name, spec.get("volumes")),
        network_topology=clone(typed(topology, Mapping, "spec.networkTopology")) if topology is not None else None,
        policies=job_policies,
        running_estimate=(typed(spec["runningEstimate"], str, "spec.runningEstimate")
                          if spec.get("runningEstimate") is not None else None),
    )


def _task(raw: Any, i: int, job_policies: tuple[Mapping[str, Any], ...], limits: JobLimits,
          earlier_replicas: int) -> TaskSpec:
    where = f"spec.tasks[{i}]"
    if not isinstance(raw, Mapping):
        raise InputError(where, "expected a map")
    name = typed(raw.get("name") or f"default{i}", str, f"{where}.name")
    replicas = _count(raw.get("replicas", 0), f"{where}.replicas", limits.max_replicas_per_task)
    if earlier_replicas + replicas > limits.max_replicas:
        raise InputError(f"{where}.replicas", f"the job's tasks ask for more than {limits.max_replicas} pods in all")
    min_available = _count(raw.get("minAvailable", replicas), f"{where}.minAvailable")
    template = raw.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise InputError(f"{where}.template.spec", "is required")
    meta = typed(template.get("metadata") or {}, Mapping, f"{where}.template.metadata")
    for key in ("annotations", "labels"):
        typed(meta.get(key) or {}, Mapping, f"{where}.template.metadata.{key}")
    depends = typed(raw.get("dependsOn") or {}, Mapping, f"{where}.dependsOn")
    return TaskSpec(
        name=name,
        index=i,
        replicas=replicas,
        min_available=min_available,
        declares_min_available=raw.get("minAvailable") is not None,
        max_retry=_count(raw.get("maxRetry") or DEFAULT_MAX_RETRY, f"{where}.maxRetry"),
        depends_on=tuple(str(n) for n in typed(depends.get("name") or [], list, f"{where}.dependsOn.name")),
        depends_on_any=depends.get("iteration") == "any",
        policies=_policies(raw.get("policies"), f"{where}.policies") + job_policies,
        template=clone(template),
        partition=clone(typed(raw["partitionPolicy"], Mapping, f"{where}.partitionPolicy")) if raw.get("partitionPolicy") else None,
    )


def _policies(value: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    """Admission checks each policy; one that is not a map never matches (as before parsing)."""
    return tuple(clone(p) for p in typed(value or [], list, where) if isinstance(p, Mapping))


def _claims(job_name: str, value: Any) -> tuple[Claim, ...]:
    out = []
    for i, volume in enumerate(typed(value or [], list, "spec.volumes")):
        if not isinstance(volume, Mapping) or not volume.get("mountPath"):
            continue  # admission refuses these; never mount a volume nowhere
        if volume.get("volumeClaimName"):
            out.append(Claim(str(volume["volumeClaimName"]), str(volume["mountPath"]), None))
        else:
            created = clone(volume.get("volumeClaim") or {})
            out.append(Claim(f"{job_name}-volume-{i}", str(volume["mountPath"]), created))
    return tuple(out)


def _carried(job: Mapping[str, Any]) -> dict[str, str]:
    annotations = typed(job["metadata"].get("annotations") or {}, Mapping, "metadata.annotations")
    return {k: str(v) for k, v in annotations.items() if k in CARRIED_ANNOTATIONS}


def _strings(job: Mapping[str, Any], field: str) -> dict[str, str]:
    values = typed(job["metadata"].get(field) or {}, Mapping, f"metadata.{field}")
    return {str(k): str(v) for k, v in values.items()}


def _count(value: Any, where: str, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(where, f"expected a non-negative integer, got {value!r}")
    if maximum is not None and value > maximum:
        raise InputError(where, f"{value} exceeds the limit of {maximum}")
    return value


def _optional_count(value: Any, where: str) -> int | None:
    return None if value is None else _count(value, where)


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data (maps, lists, scalars): several times cheaper than
    copy.deepcopy, which matters when a job's pods are built from one template."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) not in _NESTED else clone(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) not in _NESTED else clone(v) for v in value]
    if isinstance(value, Mapping):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clone(v) for v in value)
    return value


_NESTED = frozenset({dict, list})


# --- parsed once per spec change --------------------------------------------------------------

_CACHE_SIZE = 4096
# id(spec map) -> (the spec map, what else the parse read from the job, the parsed spec)
_cache: dict[int, tuple[Mapping[str, Any], tuple[Any, ...], JobSpec]] = {}
_cache_lock = threading.Lock()  # the loop's workers reconcile jobs in threads


def _frozen(values: Any) -> Any:
    """A map compared by value (the PodGroup carries every annotation and label)."""
    return tuple(sorted(values.items())) if isinstance(values, Mapping) else values


def job_spec(job: Mapping[str, Any], limits: JobLimits = DEFAULT_LIMITS) -> JobSpec:
    """parse_job, parsed again only when the job's spec (or the limits) changed."""
    spec, meta = job.get("spec"), job.get("metadata")
    if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
        return parse_job(job, limits)
    read = (meta.get("namespace"), meta.get("name"), meta.get("uid"), meta.get("generation"),
            _frozen(meta.get("annotations")), _frozen(meta.get("labels")), limits)
    entry = _cache.get(id(spec))
    if entry is not None and entry[0] is spec and entry[1] == read:
        return entry[2]
    parsed = parse_job(job, limits)
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))  # the oldest entry
        _cache[id(spec)] = (spec, read, parsed)
    return parsed
