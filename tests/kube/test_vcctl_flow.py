"""`caldera jobflow` and `caldera jobtemplate`: vcctl's subcommands, flags and list layout."""

from __future__ import annotations

import argparse

from central.cli import _command_parser
from central.vcctl import jobflow, jobtemplate
from central.vcctl.flow import _rows, table


def parse(module, name: str, *argv: str) -> argparse.Namespace:
    parser = _command_parser(name)
    module.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_subcommands_and_flags_are_vcctls():
    args = parse(jobflow, "jobflow", "get", "-N", "dag", "-n", "team")
    assert (args.action, args.name, args.namespace) == ("get", "dag", "team")
    assert parse(jobflow, "jobflow", "describe", "-N", "dag", "-o", "json").format == "json"
    assert parse(jobtemplate, "jobtemplate", "create", "-f", "t.yaml").file == "t.yaml"
    assert parse(jobtemplate, "jobtemplate", "list", "--all-namespaces").all_namespaces


def test_list_columns_are_padded_by_four_as_vcctls():
    flows = [{"metadata": {"name": "dag", "namespace": "default"}, "status": {"state": {"phase": "Running"}}}]
    lines = table(_rows("jobflow", flows)).splitlines()
    assert lines == ["Name    Namespace    Phase      Age          ", "dag     default      Running    <unknown>    "]
    templates = [{"metadata": {"name": "a-long-template", "namespace": "ns"}}]
    assert table(_rows("jobtemplate", templates)) == "Name               Namespace    \na-long-template    ns           \n"
