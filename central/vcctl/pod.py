"""`caldera pod list`, as `vcctl pod list`: pods of Volcano Jobs, by job or queue."""

from __future__ import annotations

import argparse
from typing import Any

from central.kube.client import CORE, path
from central.kube.command_errors import api_errors
from central.model.jobs import JOB_NAME as JOB_NAME_LABEL
from central.model.parse import QUEUE_NAME
from central.vcctl.common import Column, add_connection, add_listing, add_output, age, connect, show
from central.vcctl.tables import pod_table

QUEUE_KEYS = (QUEUE_NAME, "volcano.sh/queue-name")  # ours, and Volcano's job controller's


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="list pod information created by vcjob")
    lst.add_argument("-j", "--job", default="", help="only the pods of this job (default: any Volcano Job's)")
    lst.add_argument("-q", "--queue", default="", help="only the pods in this queue (default: any)")
    add_listing(lst, "pods")
    add_connection(lst, namespaced=True)
    add_output(lst, wide=True)


@api_errors("pod")
def run(args: argparse.Namespace) -> int:
    client = connect(args)
    selector = ",".join(filter(None, (f"{JOB_NAME_LABEL}={args.job}" if args.job else JOB_NAME_LABEL,
                                      args.selector)))
    url = path(CORE, "pods", None if args.all_namespaces else args.namespace)
    items = client.request("GET", url, {"labelSelector": selector}).get("items") or []
    if args.queue:
        items = [p for p in items
                 if args.queue in {(p["metadata"].get("annotations") or {}).get(k) for k in QUEUE_KEYS}]
    if args.output in ("table", "wide") and not items:
        print("No resources found")
        return 0
    columns = ([("Namespace", lambda p: p["metadata"]["namespace"])] if args.all_namespaces else []) + COLUMNS
    items = sorted(items, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    if args.output == "table":  # vcctl's PrintPods, byte for byte
        print(pod_table(items, columns), end="")
        return 0
    columns += WIDE_COLUMNS if args.output == "wide" else []
    show(items, args.output, columns)
    return 0


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return (pod.get("status") or {}).get("containerStatuses") or []


COLUMNS: list[Column] = [
    ("Name", lambda p: p["metadata"]["name"]),
    ("Ready", lambda p: f"{sum(1 for c in _containers(p) if c.get('ready'))}/{len(p['spec'].get('containers') or [])}"),
    ("Status", lambda p: (p.get("status") or {}).get("phase", "Unknown")),
    ("Restart", lambda p: sum(int(c.get("restartCount") or 0) for c in _containers(p))),
    ("Age", age),
]
WIDE_COLUMNS: list[Column] = [
    ("IP", lambda p: (p.get("status") or {}).get("podIP") or "<none>"),
    ("Node", lambda p: p["spec"].get("nodeName") or "<none>"),
    ("Queue", lambda p: next(filter(None, ((p["metadata"].get("annotations") or {}).get(k) for k in QUEUE_KEYS)),
                             "<none>")),
]
