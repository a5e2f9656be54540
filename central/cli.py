"""`caldera <command>` for everything central owns.

Each command lives in its own module, which exposes ``add_arguments(parser)`` and
``run(args) -> int``; this file only lists them, so adding a command is one line here.
Modules are imported only when their command runs, so `caldera simulate` never pays for
the Kubernetes client.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from central.errors import InputError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("central.sim.command", "dry-run scheduling cycles on manifests, print what would happen"),
    "bench": ("central.sim.bench", "scale benchmark of a scheduling session on a synthetic cluster"),
    "validate": ("central.admission.command", "check manifests as the admission webhook would, against a cluster"),
    "scheduler": ("central.kube.scheduler_cli", "run the scheduler on a cluster (leader-elected, watches the API)"),
    "controllers": ("central.kube.controllers_cli", "run the Job, Queue and PodGroup controllers on a cluster (leader-elected)"),
    "webhook": ("central.kube.webhook", "serve the admission webhook (HTTPS) for Jobs, Queues and PodGroups"),
    "certs": ("central.kube.certs", "create or renew the webhook's and the scheduler's TLS certificates in Secrets"),
    "job": ("central.vcctl.job", "vcctl job: run, list, view, suspend, resume, delete Volcano Jobs"),
    "queue": ("central.vcctl.queue", "vcctl queue: create, list, get, operate, delete Queues"),
    "pod": ("central.vcctl.pod", "vcctl pod: list the pods of Volcano Jobs"),
    "version": ("central.vcctl.version", "print the Caldera version"),
    "up": ("central.localcluster.up", "start a real local cluster (kube-apiserver, simulated nodes) with Caldera installed"),
    "down": ("central.localcluster.down", "stop a cluster started by `caldera up` and remove its folder"),
    "fragmentation": ("central.sim.fragmentation", "GPU fragmentation at saturation per deviceshare policy"),
    "trace": ("central.sim.tracecli", "write workload traces (synthetic, or from the Alibaba PAI trace) for simulate"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caldera", description="Volcano-compatible batch scheduling.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("agent", help="run the node agent (see `caldera agent --help`)")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        parser = _parser()
        if args and not args[0].startswith("-"):
            parser.error(f"unknown command {args[0]!r}; choose from: agent, {', '.join(COMMANDS)}")
        parser.print_help()
        return 0 if args else 2
    name = args[0]
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(prog=f"caldera {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    parsed = parser.parse_args(args[1:])
    try:
        return module.run(parsed)
    except InputError as err:
        print(f"caldera {name}: error: {' '.join(str(err).split())}", file=sys.stderr)  # one line, always
        return 2
