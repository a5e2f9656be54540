"""`caldera simulate --until`: one workload over simulated time, under one or more configurations.

Objects are read as a user would `kubectl apply` them: Nodes, PriorityClasses, HyperNodes,
ResourceQuotas and PodDisruptionBudgets are there from the start (the last two as written: no
controller updates their status here); Queues, Volcano Jobs (through admission's defaults, then the job controller),
PodGroups, Pods, Commands, CronJobs, JobFlows and JobTemplates (their controllers start Jobs,
`central.sim.workflows`) are created at their `sim.caldera.sh/submit-at` (default 0).
Every sim annotation is checked before the run starts, so a typo costs one line and exit 2,
not a run. With several --config files the same workload runs under each, and JSON becomes
`{"runs": {"<config file>": {...}}}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from central.admission.cluster import Cluster
from central.admission.jobs import mutate_job, validate_job
from central.admission.workloads import validate_cronjob, validate_jobflow
from central.controllers import bus
from central.errors import InputError
from central.framework.conf import SchedulerConf
from central.manifests import read_objects
from central.model import parse, podlife
from central.model.cache import ClusterCache
from central.model.fields import object_ref
from central.model.hypernodes import parse_hypernode
from central.model.policy import parse_pdb, parse_resource_quota
from central.model.queuetree import check_queues
from central.sim.timeline import TimedResult, Timeline
from central.sim.trace import read_trace
from central.sim.workflows import KINDS as WORKFLOW_KINDS
from central.sim.workloads import expand_workload, is_workload

STATIC = ("PriorityClass", "Node", "HyperNode", "ResourceQuota", "PodDisruptionBudget")
SUBMITTED = ("Queue", "Job", "PodGroup", "Pod", "Command", *WORKFLOW_KINDS)


@dataclass
class Workload:
    static: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (source, object)
    submitted: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def read_workload(paths: list[str], traces: Sequence[str] = (), scheduler_name: str = "volcano") -> Workload:
    """Every object under `paths` and every job of `traces`, checked: InputError names the
    file, object (or trace row) and field. Jobs pass admission as the webhook would admit them
    against the workload's Queues. Deployments, ReplicaSets, StatefulSets and batch Jobs whose
    pods name `scheduler_name` become their PodGroup and pods (central/sim/workloads.py)."""
    out = Workload()
    found = [(source, obj) for path in paths for source, obj in read_objects(path)]
    cluster = Cluster.from_objects(obj for _, obj in found if obj["kind"] == "Queue")
    templates: dict[str, Any] = {}
    for where, job in (row for trace in traces for row in read_trace(trace)):
        try:
            out.submitted.append((where, admit_job(job, cluster)))
        except InputError as err:
            raise err.within(where) from None
    for source, obj in _expanded(found, scheduler_name, out.skipped):
        kind = obj["kind"]
        try:
            if kind == "Job" and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
                obj = admit_job(obj, cluster)
            elif kind in WORKFLOW_KINDS:
                admit_workflow(obj, cluster)
            elif kind not in STATIC + SUBMITTED or kind == "Job":  # a Job not Volcano's and not expanded
                out.skipped[kind] = out.skipped.get(kind, 0) + 1
                continue
            check_object(obj, templates)
        except InputError as err:
            raise err.within(source) from None
        (out.static if kind in STATIC else out.submitted).append((source, obj))
    return out


def _expanded(found: list[tuple[str, dict[str, Any]]], scheduler_name: str,
              skipped: dict[str, int]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects, with each workload of Kubernetes' controllers replaced by what it makes
    (its PodGroup and pods); one for another scheduler is counted in `skipped`."""
    for source, obj in found:
        if not is_workload(obj):
            yield source, obj
            continue
        try:
            made = expand_workload(obj, scheduler_name)
        except InputError as err:
            raise err.within(source) from None
        if not made:
            skipped[obj["kind"]] = skipped.get(obj["kind"], 0) + 1
        yield from ((source, made_obj) for made_obj in made)


def admit_job(job: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    """The Job as admission stores it (defaults, then validation against `cluster`), with the
    sim annotations of each task's template checked as its pods will carry them."""
    job = mutate_job(job)
    problems = validate_job(job, cluster)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(object_ref(job), problems[0] + more)
    meta = job["metadata"]
    meta.setdefault("namespace", "default")
    meta.setdefault("uid", f"{meta['namespace']}-{meta['name']}")
    for task in job["spec"]["tasks"]:
        template_meta = (task.get("template") or {}).get("metadata") or {}
        _check_pod_life({"kind": "Pod", "metadata": {  # the task's first pod, as far as sim annotations go
            "name": f"{meta['name']}-{task['name']}-0", "namespace": meta["namespace"],
            "annotations": template_meta.get("annotations") or {}}})
    return job


def admit_workflow(obj: dict[str, Any], cluster: Cluster) -> None:
    """A CronJob, JobFlow or JobTemplate as the webhook admits it, the Jobs it will start
    checked as Jobs (the CronJob's jobTemplate, the JobTemplate's spec): InputError names the field."""
    kind = obj["kind"]
    validate = {"CronJob": validate_cronjob, "JobFlow": validate_jobflow}.get(kind)
    problems = validate(obj) if validate is not None else []
    if problems:
        raise InputError(object_ref(obj), problems[0])
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    template = spec.get("jobTemplate") if kind == "CronJob" else spec if kind == "JobTemplate" else None
    if isinstance(template, dict):
        body = template.get("spec") if kind == "CronJob" else template
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
               "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace") or "default"},
               "spec": body if isinstance(body, dict) else {}}
        where = "spec.jobTemplate.spec" if kind == "CronJob" else "spec"
        try:
            admit_job(job, cluster)
        except InputError as err:
            raise InputError(object_ref(obj), f"{where}: {err}") from None


def check_object(obj: dict[str, Any], templates: dict[str, Any] | None = None) -> None:
    """Refuse before the run starts what would fail during it: InputError names the object and
    field. `templates` memoises parsed pod templates across calls (the pods of a task share one)."""
    kind = obj.get("kind")
    podlife.submit_at(obj)
    podlife.min_peers(obj)
    if kind == "Command":
        if not isinstance(obj.get("target"), dict):
            raise InputError(object_ref(obj), "target: expected a map naming the Job or Queue")
        if obj.get("action") not in (*bus.JOB_COMMANDS, *bus.QUEUE_COMMANDS):
            raise InputError(object_ref(obj), f"action: unknown {obj.get('action')!r}")
        return
    if kind == "Pod":
        _check_pod_life(obj)
    parser = {"Pod": lambda o: parse.parse_pod(o, templates), "PodGroup": parse.parse_podgroup,
              "Queue": parse.parse_queue, "HyperNode": parse_hypernode,
              "ResourceQuota": parse_resource_quota, "PodDisruptionBudget": parse_pdb}.get(str(kind))
    if parser is not None:
        try:
            parser(obj)
        except InputError as err:
            raise err.within(object_ref(obj)) from None


def _check_pod_life(pod: dict[str, Any]) -> None:
    podlife.min_peers(pod)
    podlife.pod_duration(pod)
    podlife.pod_exit_code(pod)
    podlife.cross_node_slowdown(pod)


@dataclass(frozen=True)
class RunOptions:
    until: float
    period: float
    stuck_after: float
    start: datetime
    scheduler_name: str = "volcano"
    node_reports: tuple[Any, ...] = ()  # NodeData, taken as current at the start
    progress: Callable[[float], None] | None = None  # called with the simulated time at every instant


def run_once(workload: Workload, conf: SchedulerConf, options: RunOptions) -> TimedResult:
    cache = ClusterCache(scheduler_name=options.scheduler_name)
    for source, obj in workload.static:
        try:
            cache.apply(obj)
        except InputError as err:
            raise err.within(source) from None
    timeline = Timeline(cache, conf, options.start, options.period, options.stuck_after)
    queue_sources = {}
    for source, obj in workload.submitted:
        if obj["kind"] == "Queue":
            queue_sources[obj["metadata"]["name"]] = source
            try:
                cache.apply(obj)
            except InputError as err:
                raise err.within(source) from None
        timeline.submit(obj)
    check_queues(cache.all_queues(), queue_sources)
    for data in options.node_reports:
        cache.set_node_data(replace(data, reported_at=options.start))
    return timeline.run(options.until, options.progress)


def print_runs(runs: dict[str, TimedResult], output: str, details: bool = False) -> None:
    """JSON, or for a person the summary (one run) or the comparison (several); `details` adds
    each run's per-job table."""
    if output == "json":
        body = next(iter(runs.values())).to_json() if len(runs) == 1 else {
            "runs": {name: r.to_json() for name, r in runs.items()}}
        print(json.dumps(body, indent=2))
        return
    print(summary(next(iter(runs.values()))) if len(runs) == 1 else comparison(runs))
    if details:
        for name, run in runs.items():
            print(f"\nJobs ({len(run.jobs)})" + (f" under {name}" if len(runs) > 1 else ""))
            print(job_table(run))


JOB_COLUMNS = ("JOB", "QUEUE", "PHASE", "SUBMITTED", "STARTED", "FINISHED", "WAIT", "JCT")


def job_rows(result: TimedResult) -> list[tuple[str, ...]]:
    """One row per job, in order of submission: times from the start of the run, then the wait
    (submitted to started) and the JCT (submitted to finished); "-" where not reached."""
    rows: list[tuple[str, ...]] = []
    for key, job in sorted(result.jobs.items(), key=lambda kj: (kj[1]["submitted"], kj[0])):
        submitted, started, finished = job["submitted"], job["started"], job["finished"]
        rows.append((key, job["queue"], job["phase"], _clock(submitted), _clock(started), _clock(finished),
                     _span(started - submitted if started is not None else None),
                     _span(finished - submitted if finished is not None else None)))
    return rows


def job_table(result: TimedResult) -> str:
    rows = [JOB_COLUMNS, *job_rows(result)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(JOB_COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def _clock(seconds: float | None) -> str:
    """A moment of the run as H:MM:SS from its start (days as `2d 3:04:05`)."""
    if seconds is None:
        return "-"
    days, rest = divmod(int(round(seconds)), 86400)
    hours, rest = divmod(rest, 3600)
    text = f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days}d {text}" if days else text


def summary(result: TimedResult) -> str:
    """The run for a person: the figures, then what did not finish and what got stuck."""
    m = result.metrics
    done = sum(1 for j in result.jobs.values() if j["finished"] is not None)
    lines = [f"Simulated {_span(result.time)} in {result.wall_s:.1f}s wall: {result.events} events at "
             f"{result.instants} instants, {result.cycles} cycles; {done}/{len(result.jobs)} jobs finished",
             f"  makespan {_span(m['makespan_s'])}, mean wait {_span(m['mean_wait_s'])}, "
             f"mean JCT {_span(m['mean_jct_s'])}, p95 JCT {_span(m['p95_jct_s'])}",
             "  utilization " + ", ".join(f"{n} {v:.0%}" for n, v in m["utilization"].items())]
    lines += [f"  queue {q}: share {s['share']:.0%} (deserved {s['deserved']:.0%})"
              for q, s in m["queue_share"].items()]
    if result.still_running:
        lines.append(f"Still running at the end ({len(result.still_running)}): " + ", ".join(result.still_running[:20])
                     + (" ..." if len(result.still_running) > 20 else ""))
    for job, s in m["stuck"].items():
        lines.append(f"Stuck: {job} ran {s['running']:.0f} of the {s['needs']:.0f} pods it needs "
                     f"for {_span(s['for_s'])} from {_span(s['since'])} (gang deadlock)")
    return "\n".join(lines)


def comparison(runs: dict[str, TimedResult]) -> str:
    rows = comparison_rows(runs)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def comparison_rows(runs: dict[str, TimedResult]) -> list[tuple[str, ...]]:
    """The header, then one row of figures per configuration."""
    rows: list[tuple[str, ...]] = [("configuration", "finished", "makespan", "mean wait", "mean JCT", "p95 JCT", "stuck", "utilization")]
    for name, r in runs.items():
        m = r.metrics
        done = sum(1 for j in r.jobs.values() if j["finished"] is not None)
        rows.append((name, f"{done}/{len(r.jobs)}", _span(m["makespan_s"]), _span(m["mean_wait_s"]),
                     _span(m["mean_jct_s"]), _span(m["p95_jct_s"]), str(len(m["stuck"])),
                     " ".join(f"{n}={v:.0%}" for n, v in m["utilization"].items())))
    return rows


def _span(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def config_name(path: str | None) -> str:
    return Path(path).name if path else "default"
