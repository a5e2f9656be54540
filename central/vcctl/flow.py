"""`caldera jobflow|jobtemplate create|list|get|delete|describe`, as `vcctl jobflow` and
`vcctl jobtemplate` (flow.volcano.sh/v1alpha1): the same subcommands, flags and table columns.

create and delete read every document of a YAML file (`-f`); get, delete and describe name one
object (`-N`); list prints Name, Namespace (and, for JobFlows, Phase and Age) in columns padded
by four spaces, as vcctl's; describe prints the object as YAML or JSON (`-o`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import yaml

from central.errors import InputError
from central.kube.client import VOLCANO_FLOW, path
from central.kube.command_errors import api_errors
from central.vcctl.common import add_connection, age, connect

KINDS = {"jobflow": ("JobFlow", "jobflows", "jobflow"), "jobtemplate": ("JobTemplate", "jobtemplates", "job template")}
COLUMN_SPACING = 4


def add_arguments_for(kind: str) -> Any:
    _, _, noun = KINDS[kind]

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        plural = "jobflows" if kind == "jobflow" else "job templates"
        for action, help_text in (("create", f"create a {noun}"), ("list", f"list {plural}"), ("get", f"get a {noun}"),
                                  ("delete", f"delete a {noun}"), ("describe", f"describe a {noun}")):
            p = sub.add_parser(action, help=help_text)
            if action in ("create", "delete"):
                p.add_argument("-f", "--file", default="", help=f"the path to the YAML file containing the {noun}")
            if action != "create" and action != "list":
                p.add_argument("-N", "--name", default="", help=f"the name of {noun}")
            if action == "list":
                p.add_argument("--all-namespaces", action="store_true", help=f"list {plural} in all namespaces")
            if action == "describe":
                p.add_argument("-o", "--format", default="yaml", choices=("yaml", "json"), help="the format of output")
            add_connection(p, namespaced=True)
    return add_arguments


def _documents(file: str) -> list[dict[str, Any]]:
    try:
        with open(file, encoding="utf-8") as handle:
            return [d for d in yaml.safe_load_all(handle) if d]
    except OSError as err:
        raise InputError("--file", f"cannot read {file}: {err.strerror}") from err


def table(rows: list[list[str]]) -> str:
    """vcctl's list layout: each column as wide as its widest cell plus four spaces."""
    widths = [max(len(row[i]) for row in rows) + COLUMN_SPACING for i in range(len(rows[0]))]
    return "".join("".join(cell.ljust(w) for cell, w in zip(row, widths)) + "\n" for row in rows)


def run_for(kind: str) -> Any:
    title, plural, noun = KINDS[kind]

    @api_errors(kind)
    def run(args: argparse.Namespace) -> int:
        client = connect(args)
        namespace = args.namespace or "default"
        if args.action == "create" or (args.action == "delete" and args.file):
            if not args.file:
                raise InputError("--file", f"the YAML file of the {noun} is required")
            for obj in _documents(args.file):
                ns = (obj.get("metadata") or {}).get("namespace") or namespace
                obj.setdefault("metadata", {})["namespace"] = ns
                if args.action == "create":
                    client.create(path(VOLCANO_FLOW, plural, ns), obj)
                    print(f"Created {title}: {ns}/{obj['metadata'].get('name')}")
                else:
                    client.delete(path(VOLCANO_FLOW, plural, ns, obj["metadata"].get("name")))
                    print(f"Deleted {title}: {ns}/{obj['metadata'].get('name')}")
            return 0
        if args.action == "list":
            items = client.get(path(VOLCANO_FLOW, plural, None if args.all_namespaces else namespace)).get("items") or []
            if not items:
                print("No resources found")
                return 0
            print(table(_rows(kind, items)), end="")
            return 0
        if not args.name:
            raise InputError("--name", f"the name of the {noun} is required")
        obj = client.get(path(VOLCANO_FLOW, plural, namespace, args.name))
        if args.action == "get":
            print(table(_rows(kind, [obj])), end="")
        elif args.action == "delete":
            client.delete(path(VOLCANO_FLOW, plural, namespace, args.name))
            print(f"Deleted {title}: {namespace}/{args.name}")
        else:
            obj.setdefault("apiVersion", "flow.volcano.sh/v1alpha1")
            obj.setdefault("kind", title)
            print(json.dumps(obj, indent=2) if args.format == "json" else yaml.safe_dump(obj, sort_keys=False), end="\n")
        return 0
    return run


def _rows(kind: str, items: list[dict[str, Any]]) -> list[list[str]]:
    if kind == "jobtemplate":
        return [["Name", "Namespace"]] + [[o["metadata"]["name"], o["metadata"].get("namespace", "")] for o in items]
    return [["Name", "Namespace", "Phase", "Age"]] + [
        [o["metadata"]["name"], o["metadata"].get("namespace", ""),
         str(((o.get("status") or {}).get("state") or {}).get("phase") or ""), age(o)] for o in items]
