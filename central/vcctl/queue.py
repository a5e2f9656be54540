"""`caldera queue create|list|get|operate|delete`, as `vcctl queue`.

`operate -a open|close` creates an OpenQueue / CloseQueue Command for the Queue controller,
as vcctl does (the controller then moves the queue to Open, or to Closing and Closed once its
PodGroups drain, cascading to child queues); `-a update` patches the weight directly.
"""

from __future__ import annotations

import argparse
from typing import Any

from central.errors import InputError
from central.kube.client import VOLCANO_BUS, VOLCANO_SCHEDULING, path
from central.kube.command_errors import api_errors
from central.vcctl.common import Column, add_connection, add_output, admitted, connect, show
from central.vcctl.tables import queue_table

COMMAND_NAMESPACE = "default"  # Commands are namespaced; a Queue is not


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="creates queue")
    create.add_argument("-n", "--name", required=True, help="the name of the queue")
    create.add_argument("-w", "--weight", type=int, default=1, help="the weight of the queue")
    create.add_argument("-S", "--state", default="Open", choices=("Open", "Closed"), help="the state of the queue")
    create.add_argument("-p", "--parent", default="", help="the parent queue (hierarchical queues)")
    operate = sub.add_parser("operate", help="operate queue")
    operate.add_argument("-n", "--name", required=True, help="the name of the queue")
    operate.add_argument("-a", "--action", dest="operation", required=True, choices=("open", "close", "update"),
                         help="open, close or update")
    operate.add_argument("-w", "--weight", type=int, default=0, help="the new weight (with -a update)")
    for name, help_text in (("get", "get a queue"), ("delete", "delete queue"), ("list", "lists all the queue")):
        p = sub.add_parser(name, help=help_text)
        if name != "list":
            p.add_argument("-n", "--name", required=True, help="the name of the queue")
        if name == "list":
            p.add_argument("-l", "--selector", default="", help="label selector, e.g. team=ml (default: all)")
        if name != "delete":
            add_output(p, wide=name == "list")
        add_connection(p)
    for p in (create, operate):
        add_connection(p)


@api_errors("queue")
def run(args: argparse.Namespace) -> int:
    client = connect(args)
    url = path(VOLCANO_SCHEDULING, "queues", None, getattr(args, "name", None))
    if args.action == "create":
        if args.weight < 1:
            raise InputError("--weight", f"must be a positive integer, got {args.weight}")
        spec: dict[str, Any] = {"weight": args.weight, "reclaimable": True}
        if args.parent:
            spec["parent"] = args.parent
        queue = admitted(client, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                  "metadata": {"name": args.name}, "spec": spec}, f"Queue {args.name}")
        queue = client.create(path(VOLCANO_SCHEDULING, "queues"), queue)
        if args.state == "Closed":  # status is a subresource: the Queue controller closes it
            client.create(path(VOLCANO_BUS, "commands", COMMAND_NAMESPACE), queue_command(queue, "CloseQueue"))
        print(f"create queue {args.name} successfully")
    elif args.action == "list":
        items = client.request("GET", url, {"labelSelector": args.selector or None}).get("items") or []
        if args.output in ("table", "wide") and not items:
            print("No resources found")
            return 0
        items = sorted(items, key=lambda q: q["metadata"]["name"])
        if args.output == "table":  # vcctl's PrintQueues, byte for byte
            print(queue_table(items), end="")
            return 0
        show(items, args.output, COLUMNS + (WIDE_COLUMNS if args.output == "wide" else []))
    elif args.action == "get":
        show([client.get(url)], args.output, COLUMNS, single=args.output != "table")
    elif args.action == "delete":
        client.delete(url)
        print(f"delete queue {args.name} successfully")
    elif args.operation == "update":
        if args.weight < 1:
            raise InputError("--weight", "a positive weight is required with --action update")
        client.merge_patch(url, {"spec": {"weight": args.weight}})
        print(f"update queue {args.name} successfully")
    else:
        queue = client.get(url)
        action = "OpenQueue" if args.operation == "open" else "CloseQueue"
        client.create(path(VOLCANO_BUS, "commands", COMMAND_NAMESPACE), queue_command(queue, action))
        print(f"{args.operation} queue {args.name} successfully")
    return 0


def queue_command(queue: dict[str, Any], action: str) -> dict[str, Any]:
    ref = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": queue["metadata"]["name"],
           "uid": queue["metadata"].get("uid"), "controller": True, "blockOwnerDeletion": True}
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"generateName": f"{queue['metadata']['name']}-{action.lower()}-",
                         "namespace": COMMAND_NAMESPACE, "ownerReferences": [ref]},
            "target": ref, "action": action}


def _status(queue: dict[str, Any], field: str) -> Any:
    return (queue.get("status") or {}).get(field) or 0


COLUMNS: list[Column] = [
    ("Name", lambda q: q["metadata"]["name"]),
    ("Weight", lambda q: (q.get("spec") or {}).get("weight", 1)),
    ("State", lambda q: (q.get("status") or {}).get("state") or "Open"),
    ("Inqueue", lambda q: _status(q, "inqueue")),
    ("Pending", lambda q: _status(q, "pending")),
    ("Running", lambda q: _status(q, "running")),
    ("Unknown", lambda q: _status(q, "unknown")),
    ("Completed", lambda q: _status(q, "completed")),
]
WIDE_COLUMNS: list[Column] = [
    ("Parent", lambda q: (q.get("spec") or {}).get("parent") or "root"),
    ("Capability", lambda q: _resources((q.get("spec") or {}).get("capability"))),
    ("Allocated", lambda q: _resources((q.get("status") or {}).get("allocated"))),
]


def _resources(items: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((items or {}).items())) or "<none>"

