"""What every vcctl command shares: connection flags, output formats, API errors as one line.

Tables follow vcctl's column names so scripts written against vcctl keep working; `-o yaml`
and `-o json` print the objects as the API returned them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import yaml

from central.errors import InputError

Column = tuple[str, Callable[[dict[str, Any]], Any]]


def add_connection(parser: argparse.ArgumentParser, namespaced: bool = False) -> None:
    """kubectl's connection flags; `namespaced` adds -n/--namespace, defaulting (in `connect`)
    to the kubeconfig context's namespace as kubectl does."""
    parser.add_argument("-k", "--kubeconfig", help="(optional) absolute path to the kubeconfig file "
                                                   "(default: $KUBECONFIG, in-cluster, then ~/.kube/config)")
    parser.add_argument("--context", help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("-s", "--master", help="the address of apiserver (overrides the kubeconfig's; "
                                               "without a kubeconfig, no credentials are sent)")
    if namespaced:
        parser.add_argument("-n", "--namespace", help="the namespace (default: the kubeconfig context's, "
                                                      "else default)")


def add_output(parser: argparse.ArgumentParser, wide: bool = False) -> None:
    choices = ("table", "wide", "yaml", "json") if wide else ("table", "yaml", "json")
    parser.add_argument("-o", "--output", choices=choices, default="table",
                        help="output format (default: table)")


def add_listing(parser: argparse.ArgumentParser, what: str) -> None:
    """-A and -l of `kubectl get`, for the list commands of namespaced objects."""
    parser.add_argument("-A", "--all-namespaces", action="store_true", help=f"list {what} in all namespaces")
    parser.add_argument("-l", "--selector", default="", help="label selector, e.g. app=train (default: all)")


def connect(args: argparse.Namespace) -> Any:
    """The client for the connection flags; fills in `args.namespace` when it was not given."""
    from central.kube.client import KubeClient

    client = KubeClient.connect(args.kubeconfig, host=args.master, context=args.context)
    resolve_namespace(args)
    return client


def resolve_namespace(args: argparse.Namespace) -> None:
    """`args.namespace` as kubectl picks it when -n was not given (reads the kubeconfig only)."""
    from central.kube.client import KubeClient

    if getattr(args, "namespace", "") is None:
        args.namespace = KubeClient.default_namespace(args.kubeconfig, args.context)


def age(obj: dict[str, Any]) -> str:
    """kubectl's AGE column: the time since creation, as `human_duration` writes it."""
    stamp = obj.get("metadata", {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    created = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return human_duration((datetime.now(timezone.utc) - created).total_seconds())


def human_duration(seconds: float) -> str:
    """apimachinery's HumanDuration, as vcctl copies it (`2m5s`, `3h10m`, `5d2h`, `2y30d`)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return f"{hours // 24 // 365}y{(hours // 24) % 365}d"
    return f"{hours // 24 // 365}y"


def show(objects: Sequence[dict[str, Any]], output: str, columns: Sequence[Column], single: bool = False) -> None:
    if output == "json":
        print(json.dumps(objects[0] if single else {"apiVersion": "v1", "kind": "List", "items": list(objects)},
                         indent=2))
    elif output == "yaml":
        print(yaml.safe_dump(objects[0] if single else {"apiVersion": "v1", "kind": "List", "items": list(objects)},
                             sort_keys=False), end="")
    else:
        rows = [[str(fn(obj)) for _, fn in columns] for obj in objects]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, (h, _) in enumerate(columns)]
        for row in [[h for h, _ in columns]] + rows:
            print("   ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def parse_resources(text: str, where: str) -> dict[str, str]:
    """vcctl's "cpu=1000m,memory=100Mi" resource lists."""
    from central.resources.quantity import parse_quantity

    result = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise InputError(where, f"expected name=quantity pairs like cpu=1000m,memory=100Mi, got {item!r}")
        try:
            parse_quantity(value)
        except (InputError, ValueError) as err:
            raise InputError(where, f"{name}: invalid quantity {value!r}: {err}") from None
        result[name] = value
    return result


def admitted(client: Any, obj: dict[str, Any], where: str) -> dict[str, Any]:
    """`obj` defaulted and checked as the admission webhook would, against the cluster's queues;
    InputError listing every problem (with its field path) if it would be refused."""
    from central.admission import Cluster, admit
    from central.kube.client import VOLCANO_SCHEDULING, path

    queues = client.get(path(VOLCANO_SCHEDULING, "queues")).get("items") or []
    review = admit(obj, Cluster.from_objects(dict(q, kind="Queue") for q in queues))
    if not review.allowed:
        raise InputError(where, "; ".join(review.errors))
    return review.object
