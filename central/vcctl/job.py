"""`caldera job run|list|view|suspend|resume|delete`, as `vcctl job`.

suspend and resume do not change the Job: like vcctl they create a bus.volcano.sh Command
(AbortJob / ResumeJob) owned by the Job, which the Job controller consumes.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from typing import Any

from central.errors import InputError
from central.kube.client import CORE, VOLCANO_BATCH, VOLCANO_BUS, ApiError, path
from central.kube.command_errors import api_errors
from central.manifests import read_file
from central.model.fields import yaml_documents
from central.model.jobs import JOB_NAME as JOB_NAME_LABEL
from central.model.jobs import JOB_NAMESPACE as JOB_NAMESPACE_LABEL
from central.vcctl.common import (
    Column,
    add_connection,
    add_listing,
    add_output,
    admitted,
    age,
    connect,
    parse_resources,
    resolve_namespace,
    show,
)
from central.vcctl.describe import describe_job, events_section, oldest_first
from central.vcctl.tables import job_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    # vcctl's words for the commands and flags it shares (cmd/cli/job.go, pkg/cli/job)
    run = sub.add_parser("run", help="run job by parameters from the command line")
    run.add_argument("-N", "--name", default="", help="the name of job")
    run.add_argument("-i", "--image", default="busybox", help="the container image of job")
    run.add_argument("-m", "--min", type=int, default=1, help="the minimal available tasks of job")
    run.add_argument("-r", "--replicas", type=int, default=1, help="the total tasks of job")
    run.add_argument("-R", "--requests", default="cpu=1000m,memory=100Mi", help="the resource request of the task")
    run.add_argument("-L", "--limits", default="cpu=1000m,memory=100Mi", help="the resource limit of the task")
    run.add_argument("-S", "--scheduler", default="volcano", help="the scheduler for this job")
    run.add_argument("-f", "--filename", default="", help="the yaml file of job")
    for name, help_text in (("list", "list job information"), ("view", "show job information"),
                            ("suspend", "abort a job"), ("resume", "resume a job"), ("delete", "delete a job")):
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == "list":
            p.add_argument("-S", "--scheduler", default="", help="list job with specified scheduler name")
            p.add_argument("-q", "--queue", default="", help="list job with specified queue name")
            add_listing(p, "jobs")
        else:
            p.add_argument("-N", "--name", required=True, help="the name of job")
        add_connection(p, namespaced=True)
        if name in ("list", "view"):
            add_output(p, wide=name == "list")
    add_connection(run, namespaced=True)
    add_output(run)


@api_errors("job")
def run(args: argparse.Namespace) -> int:
    # A bad file is the user's to fix whatever the cluster: read it before connecting.
    resolve_namespace(args)
    job = (_job_from_file(args) if args.filename else _job_from_flags(args)) if args.action == "run" else {}
    client = connect(args)
    if args.action == "run":
        namespace = job["metadata"].setdefault("namespace", args.namespace)
        job = admitted(client, job, f"Job {namespace}/{job['metadata']['name']}")
        created = client.create(path(VOLCANO_BATCH, "jobs", namespace), job)
        if args.output == "table":
            print(f"run job {created['metadata']['name']} successfully")
        else:
            show([created], args.output, COLUMNS, single=True)
    elif args.action == "list":
        url = path(VOLCANO_BATCH, "jobs", None if args.all_namespaces else args.namespace)
        items = client.request("GET", url, {"labelSelector": args.selector or None}).get("items") or []
        items = [j for j in items if (not args.scheduler or j["spec"].get("schedulerName") == args.scheduler)
                 and (not args.queue or j["spec"].get("queue") == args.queue)]
        if args.output in ("table", "wide") and not items:
            print("No resources found")
            return 0
        items = sorted(items, key=lambda j: (j["metadata"]["namespace"], j["metadata"]["name"]))
        if args.output == "table":  # vcctl's PrintJobs, byte for byte
            print(job_table(items, args.all_namespaces), end="")
            return 0
        columns = ([("Namespace", lambda j: j["metadata"]["namespace"])] if args.all_namespaces else []) + COLUMNS
        columns += WIDE_COLUMNS if args.output == "wide" else []
        show(items, args.output, columns)
    elif args.action == "view":
        job = client.get(path(VOLCANO_BATCH, "jobs", args.namespace, args.name))
        if args.output == "table":  # vcctl's PrintJobInfo then PrintEvents
            print(describe_job(job) + events_section(job_events(client, job), datetime.now(timezone.utc)), end="")
        else:
            show([job], args.output, COLUMNS, single=True)
    elif args.action in ("suspend", "resume"):
        job = client.get(path(VOLCANO_BATCH, "jobs", args.namespace, args.name))
        command = "AbortJob" if args.action == "suspend" else "ResumeJob"
        client.create(path(VOLCANO_BUS, "commands", args.namespace), job_command(job, command))
        print(f"{args.action} job {args.name} successfully")
    else:
        client.delete(path(VOLCANO_BATCH, "jobs", args.namespace, args.name))
        print(f"delete job {args.name} successfully")
    return 0


def job_command(job: dict[str, Any], action: str) -> dict[str, Any]:
    """A Command targeting `job`, shaped as vcctl creates it (owner reference = target)."""
    ref = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job["metadata"]["name"],
           "uid": job["metadata"].get("uid"), "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"generateName": f"{job['metadata']['name']}-{action.lower()}-",
                         "namespace": job["metadata"]["namespace"], "ownerReferences": [ref]},
            "target": ref, "action": action}


def job_events(client: Any, job: dict[str, Any]) -> list[dict[str, Any]]:
    """The Events about `job` (this Job, not an earlier one of its name), oldest first; none,
    with vcctl's message on stderr, where they cannot be listed."""
    meta = job["metadata"]
    about = {"involvedObject.kind": "Job", "involvedObject.name": meta["name"], "involvedObject.uid": meta.get("uid")}
    selector = ",".join(f"{field}={value}" for field, value in about.items() if value)
    try:
        listed = client.request("GET", path(CORE, "events", meta["namespace"]), {"fieldSelector": selector})
    except ApiError as err:
        print(f"Failed to list events: {err}", file=sys.stderr)
        return []
    return oldest_first(listed.get("items") or [])


def _job_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    if not args.name:
        raise InputError("--name", "a job name is required (or give --filename)")
    if args.replicas < 1 or not 0 < args.min <= args.replicas:
        raise InputError("--min", f"must be between 1 and --replicas ({args.replicas}), got {args.min}")
    resources = {"requests": parse_resources(args.requests, "--requests"),
                 "limits": parse_resources(args.limits, "--limits")}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": args.name, "namespace": args.namespace},
        "spec": {"minAvailable": args.min, "schedulerName": args.scheduler, "tasks": [{
            "name": args.name, "replicas": args.replicas,
            "template": {"metadata": {"name": args.name, "labels": {JOB_NAME_LABEL: args.name,
                                                                    JOB_NAMESPACE_LABEL: args.namespace}},
                         "spec": {"restartPolicy": "OnFailure", "containers": [{
                             "name": args.name, "image": args.image, "imagePullPolicy": "IfNotPresent",
                             "resources": resources}]}}}]},
    }


def _job_from_file(args: argparse.Namespace) -> dict[str, Any]:
    docs = yaml_documents(read_file(args.filename), args.filename)
    job = docs[0] if len(docs) == 1 else None
    if not isinstance(job, dict) or job.get("kind") != "Job" or not str(job.get("apiVersion", "")).startswith(
            "batch.volcano.sh/"):
        raise InputError(args.filename, "expected one batch.volcano.sh Job")
    if not isinstance(job.get("metadata"), dict) or not isinstance(job["metadata"].get("name"), str):
        raise InputError(args.filename, "metadata.name: required")
    return job


def _count(job: dict[str, Any], field: str) -> int:
    return int((job.get("status") or {}).get(field) or 0)


COLUMNS: list[Column] = [
    ("Name", lambda j: j["metadata"]["name"]),
    ("Creation", lambda j: (j["metadata"].get("creationTimestamp") or "")[:10]),
    ("Phase", lambda j: ((j.get("status") or {}).get("state") or {}).get("phase", "")),
    ("JobType", lambda j: "Batch"),
    ("Replicas", lambda j: sum(int(t.get("replicas") or 0) for t in j["spec"].get("tasks") or [])),
    ("Min", lambda j: j["spec"].get("minAvailable", 0)),
    ("Pending", lambda j: _count(j, "pending")),
    ("Running", lambda j: _count(j, "running")),
    ("Succeeded", lambda j: _count(j, "succeeded")),
    ("Failed", lambda j: _count(j, "failed")),
    ("Unknown", lambda j: _count(j, "unknown")),
    ("RetryCount", lambda j: _count(j, "retryCount")),
]
WIDE_COLUMNS: list[Column] = [
    ("Queue", lambda j: j["spec"].get("queue") or "default"),
    ("Scheduler", lambda j: j["spec"].get("schedulerName") or ""),
    ("Age", age),
]
