"""`caldera validate`: admission of manifests, offline, exactly as the webhook would decide.

    caldera validate --manifests PATH [--cluster PATH] [--output json|table]

Every object in --manifests (a multi-document YAML file, or a directory of them) is checked
as a create request against the objects in --cluster (queues and their states, PodGroups,
namespaces), defaults first. Queues root and default always exist. The manifests are taken
as one `kubectl apply`: their Queues are admitted first (parents before children), and each
allowed Queue (and PodGroup) is visible to the objects after it; a second object with the
same key is refused.

Output (json): one object {"<Kind>/<namespace or empty>/<name>": {"allowed": bool, "errors":
["<field.path>: <message>", ...]}}. Exit 0 when all are allowed, 1 when any is denied, 2 when
the input cannot be read (the message names the file; no traceback), 3 on an internal error
(a bug in Caldera; see caldera.cli). Pods are checked as the pods webhook would check them when
created by --as (default: an ordinary user, so scheduler-only annotations are refused).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from central.admission.cluster import Cluster
from central.admission.config import AdmissionConfig, add_job_limit_arguments
from central.admission.review import Review, admit
from central.errors import printable
from central.manifests import read_objects
from central.model.fields import map_at

CLUSTER_SCOPED = frozenset(
    {
        "Queue",
        "Namespace",
        "Node",
        "PriorityClass",
        "PersistentVolume",
        "StorageClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "HyperNode",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = AdmissionConfig()
    parser.add_argument(
        "--manifests",
        required=True,
        action="append",
        metavar="PATH",
        help="YAML file or directory of objects to check as create requests (repeatable)",
    )
    parser.add_argument(
        "--cluster",
        action="append",
        metavar="PATH",
        help="YAML file or directory of the objects that already exist (queues, ...; repeatable; default: none)",
    )
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="(default: table)")
    add_job_limit_arguments(parser)  # the webhook's flags; the shorter names they had here still work
    parser.add_argument(
        "--max-queue-depth",
        type=int,
        default=defaults.max_queue_depth,
        help="queue hierarchy depth (default %(default)s)",
    )
    parser.add_argument("--as", dest="user", default=None, metavar="USER",
                        help="the requesting user, as the API server's userInfo.username")
    parser.add_argument(
        "--scheduler-name",
        default=defaults.scheduler_name,
        help="schedulerName given to jobs without one (default %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    config = AdmissionConfig(
        max_tasks_per_job=args.max_tasks_per_job,
        max_replicas_per_task=args.max_replicas_per_task,
        max_replicas_per_job=args.max_replicas_per_job,
        max_queue_depth=args.max_queue_depth,
        scheduler_name=args.scheduler_name,
    )
    manifests = [item for path in args.manifests for item in read_objects(path)]
    existing = [obj for path in args.cluster or () for _, obj in read_objects(path)]
    results = validate_objects([obj for _, obj in manifests], Cluster.from_objects(existing), config, args.user)
    print(json.dumps(results, indent=2) if args.output == "json" else render_table(results))
    return 0 if all(r["allowed"] for r in results.values()) else 1


def object_key(obj: Mapping[str, Any]) -> str:
    kind = str(obj.get("kind") or "")
    meta = map_at(obj, "metadata")
    namespace = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
    return f"{kind}/{namespace}/{meta.get('name') or ''}"


def validate_objects(
    objects: list[dict[str, Any]], cluster: Cluster, config: AdmissionConfig, user: str | None = None
) -> dict[str, dict[str, Any]]:
    """{key: {"allowed", "errors"}} for each object (in manifest order), admitted in apply order."""
    results: dict[str, dict[str, Any]] = {}
    for obj in apply_order(objects):
        key = object_key(obj)
        if key in results:
            review = Review(
                False, ["metadata.name: an earlier object in the manifests has the same kind, namespace and name"]
            )
        else:
            review = admit(obj, cluster, config, user=user)
        if review.allowed and obj.get("kind") == "Queue":
            cluster = cluster.with_queue(review.object)
        elif review.allowed and obj.get("kind") == "PodGroup":
            cluster = cluster.with_podgroup(review.object)
        results[key] = {"allowed": review.allowed, "errors": review.errors}
    return {object_key(o): results[object_key(o)] for o in objects}


def apply_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Queues first, each parent named in the manifests before its children; then the rest in order."""
    queues = [o for o in objects if o.get("kind") == "Queue"]
    names = {_queue_name(q) for q in queues}
    placed: set[str] = set()
    ordered: list[dict[str, Any]] = []
    while queues:
        ready = [q for q in queues if _queue_parent(q) not in names - placed or _queue_parent(q) == _queue_name(q)]
        ready = ready or queues  # a cycle: admission will say so
        ordered += ready
        placed |= {_queue_name(q) for q in ready}
        queues = [q for q in queues if not any(q is r for r in ready)]
    return ordered + [o for o in objects if o.get("kind") != "Queue"]


def _queue_name(queue: Mapping[str, Any]) -> str:
    meta = queue.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""


def _queue_parent(queue: Mapping[str, Any]) -> str:
    spec = queue.get("spec")
    return str(spec.get("parent") or "root") if isinstance(spec, Mapping) else "root"


def render_table(results: dict[str, dict[str, Any]]) -> str:
    """The results for a terminal: names and messages with their control and bidi characters
    escaped (central.errors.printable); `-o json` escapes them as JSON does."""
    results = {printable(k): {**r, "errors": [printable(e) for e in r["errors"]]} for k, r in results.items()}
    width = max([len("OBJECT"), *(len(k) for k in results)])
    lines = [f"{'OBJECT':<{width}}  {'ALLOWED':<7}  ERRORS"]
    for key, result in results.items():
        errors = result["errors"] or [""]
        lines.append(f"{key:<{width}}  {'yes' if result['allowed'] else 'no':<7}  {errors[0]}")
        lines += [f"{'':<{width}}  {'':<7}  {e}" for e in errors[1:]]
    denied = sum(not r["allowed"] for r in results.values())
    lines.append(f"{len(results)} object(s), {denied} denied")
    return "\n".join(lines)


