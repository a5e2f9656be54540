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

from central.errors import InputError, printable

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("central.sim.command", "dry-run scheduling cycles on manifests, print what would happen"),
    "bench": ("central.bench.session", "scale benchmark of a scheduling session on a synthetic cluster"),
    "validate": ("central.admission.command", "check manifests as the admission webhook would, against a cluster"),
    "scheduler": ("central.scheduler.command", "run the scheduler on a cluster (leader-elected, watches the API)"),
    "controllers": ("central.controllers.loops.command",
                    "run the Job, Queue, PodGroup, HyperNode, CronJob and JobFlow controllers (leader-elected)"),
    "webhook": ("central.admission.webhook", "serve the admission webhook (HTTPS) for Jobs, Queues and PodGroups"),
    "certs": ("central.certs.command", "create or renew the webhook's and the scheduler's TLS certificates in Secrets"),
    "job": ("central.vcctl.job", "vcctl command line operation job"),
    "queue": ("central.vcctl.queue", "Queue Operations"),
    "pod": ("central.vcctl.pod", "vcctl command line operation pod"),
    "jobflow": ("central.vcctl.jobflow", "vcctl command line operation jobflow"),
    "jobtemplate": ("central.vcctl.jobtemplate", "vcctl command line operation jobtemplate"),
    "version": ("central.vcctl.version", "print the Caldera version"),
    "explain": ("central.vcctl.explain", "where a waiting job stands, why, and when it should start (forward estimate)"),
    "up": ("central.localcluster.up", "start a real local cluster (kube-apiserver, simulated nodes) with Caldera installed"),
    "down": ("central.localcluster.down", "stop a cluster started by `caldera up` and remove its folder"),
    "conformance": ("central.conformance.command", "build Volcano's e2e suites and run them against Caldera (and Volcano) on `caldera up`"),
    "fragmentation": ("central.sim.fragmentation", "GPU fragmentation at saturation per deviceshare policy"),
    "trace": ("central.sim.tracecli", "write workload traces (synthetic, or from the Alibaba PAI trace) for simulate"),
}
# The commands vcctl has too: their --help is cobra's layout, as vcctl prints it.
VCCTL_COMMANDS = ("job", "queue", "pod", "jobflow", "jobtemplate")


# Options a user may give before the command, as with kubectl (`caldera -n team job list`):
# they are moved after it, so each command parses them itself and one that has no use for
# them refuses them (exit 2) rather than ignoring them.
GLOBAL_OPTIONS = {"-k": "--kubeconfig", "--kubeconfig": "--kubeconfig", "--context": "--context",
                  "-n": "--namespace", "--namespace": "--namespace", "-s": "--master", "--master": "--master",
                  "-o": "--output", "--output": "--output"}


def hoist_globals(args: list[str]) -> list[str]:
    """`[-k F] [-n NS] COMMAND REST` as `COMMAND REST -k F -n NS`; other leading arguments
    (`--version`, `--help`, a typo) are left where they are for `main` to answer."""
    moved: list[str] = []
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name not in GLOBAL_OPTIONS:
            break
        if not eq:
            if i + 1 >= len(args):
                break
            value = args[i + 1]
            i += 1
        moved.append(f"{GLOBAL_OPTIONS[name]}={value}")
        i += 1
    if not moved or i >= len(args):
        return args
    return args[i:] + moved


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("caldera")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _HelpFormatter(argparse.HelpFormatter):
    """Every flag's help ends with its default, unless the text already names it. Not a switch
    (store_true/store_false): its default is the switch left off, and "--no-agents (default:
    True)" reads as if agents were off by default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        switch = action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction)
        if (action.option_strings and not switch and "(default" not in text
                and action.default not in (None, False, "", []) and action.default is not argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """argparse with `_HelpFormatter`; its subcommands' parsers are Parsers too."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="caldera", description="Volcano-compatible batch scheduling.",
        epilog="-k/--kubeconfig, --context, -n/--namespace, -s/--master and -o/--output may also come "
               "before the command, as with kubectl.")
    parser.add_argument("-v", "--version", action="version", version=f"caldera {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("agent", help="run the node agent (see `caldera agent --help`)")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _command_parser(name: str) -> argparse.ArgumentParser:
    if name in VCCTL_COMMANDS:
        from central.vcctl.cobrahelp import CobraParser, program_name

        return CobraParser(prog=f"{program_name()} {name}", description=COMMANDS[name][1])
    return Parser(prog=f"caldera {name}", description=COMMANDS[name][1])


def main(argv: list[str] | None = None) -> int:
    args = hoist_globals(list(sys.argv[1:] if argv is None else argv))
    if not args or args[0] not in COMMANDS:
        parser = _parser()
        if not args:
            parser.print_help(sys.stderr)
            return 2
        if not args[0].startswith("-"):
            parser.error(f"unknown command {args[0]!r}; choose from: agent, {', '.join(COMMANDS)}")
        if args[0].partition("=")[0] in GLOBAL_OPTIONS:
            parser.error(f"{args[0]} needs a command after it, e.g. caldera {args[0]} ... job list")
        parser.parse_args(args[:1])  # --help and --version exit here, anything else is an error (exit 2)
        parser.error(f"{args[0]} needs a command after it")  # parse_args has exited unless args[0] parsed
    name = args[0]
    module = importlib.import_module(COMMANDS[name][0])
    parser = _command_parser(name)
    module.add_arguments(parser)
    parsed = parser.parse_args(args[1:])
    try:
        code: int = module.run(parsed)
        return code
    except InputError as err:
        print(f"caldera {name}: error: {printable(' '.join(str(err).split()))}", file=sys.stderr)  # one line, always
        return 2
