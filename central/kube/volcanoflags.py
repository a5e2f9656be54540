"""Flags of Volcano's vc-scheduler and vc-controller-manager, taken as Volcano's Helm chart
passes them, so that its manifests run Caldera's commands unchanged.

Go's flag package takes `--name=value` for every flag and a bare `--name` for a true boolean;
klog takes `-v=N`; and the chart's args end with `2>&1`, which no shell reads there, so the Go
binaries receive it as an argument and ignore it. A flag whose work Caldera does another way
(Go worker threads, pprof, klog's stderr switch, the health and metrics switches: Caldera
always serves /healthz, /readyz and /metrics on --listen-port) is accepted and changes nothing;
Volcano's `--listen-address=:8080` names the port too, and `--healthz-address=:11251` adds
a second address that answers the same;
`ignored` names those the command was given, for one log line. A flag that asks for what
Caldera cannot do (Go plugins, provisioners left out of volume binding) is refused.
"""

from __future__ import annotations

import argparse
import logging

from central.errors import InputError
from central.model.fields import GO_BOOLS, parse_duration

SHELL_REDIRECT = "2>&1"
log = logging.getLogger(__name__)


def go_bool(text: str) -> bool:
    """A Go boolean flag's value: 1, t, true, 0, f, false, in Go's spellings."""
    if text not in GO_BOOLS:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return GO_BOOLS[text]


def add_bool(parser: argparse.ArgumentParser, name: str, default: bool | None, help: str) -> None:
    """`--name`, `--name=true|false` (Go's forms) and `--no-name`, all into one destination."""
    dest = name.lstrip("-").replace("-", "_")
    parser.add_argument(name, nargs="?", const=True, default=default, type=go_bool, metavar="BOOL", dest=dest, help=help)
    parser.add_argument("--no-" + name.lstrip("-"), action="store_false", dest=dest, help=argparse.SUPPRESS)


def add_common(parser: argparse.ArgumentParser) -> None:
    """What both of Volcano's chart templates pass."""
    add_bool(parser, "--logtostderr", None, "accepted for Volcano's chart: Caldera logs to stderr")
    add_bool(parser, "--enable-healthz", None, "accepted for Volcano's chart: /healthz and /readyz are always served")
    add_bool(parser, "--enable-metrics", None, "accepted for Volcano's chart: /metrics is always served")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, metavar="N",
                        help="klog's verbosity: 4 or more logs at debug level")
    parser.add_argument("--healthz-address", type=listen_address, default=None, metavar="HOST:PORT",
                        help="Volcano's health server address (e.g. :11251): /healthz, /readyz and /metrics "
                             "are served there too")
    parser.add_argument("shell_redirect", nargs="?", choices=[SHELL_REDIRECT], help=argparse.SUPPRESS)


def listen_address(text: str) -> tuple[str, int | None]:
    """(host, port or None) of `HOST`, Caldera's form, or `HOST:PORT`, `:PORT`, `[IPv6]:PORT`,
    Go's (an empty host is every interface). An address with several colons and no brackets
    is an IPv6 host alone."""
    host, port = text, ""
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or rest and not rest.startswith(":"):
            raise argparse.ArgumentTypeError(f"expected HOST, HOST:PORT or [IPv6]:PORT, got {text!r}")
        port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    if not port:
        return host or "0.0.0.0", None
    if not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 after the colon, got {text!r}")
    return host or "0.0.0.0", int(port)


def serving_addresses(args: argparse.Namespace) -> list[tuple[str, int]]:
    """Where the command serves /metrics, /healthz and /readyz: --listen-address (its port, else
    --listen-port) and, given one, --healthz-address."""
    host, port = args.listen_address
    out = [(host, port if port is not None else args.listen_port)]
    if args.healthz_address is not None:
        extra_host, extra_port = args.healthz_address
        if extra_port is None:
            raise InputError("--healthz-address", "names no port: expected HOST:PORT or :PORT, as Volcano's :11251")
        if (extra_host, extra_port) not in out:
            out.append((extra_host, extra_port))
    return out


def seconds(text: str) -> float:
    """A period as Go's flags take it (`1s`, `500ms`) or as a number of seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_duration(text, "").total_seconds()
    except InputError:
        raise argparse.ArgumentTypeError(f"expected seconds or a duration like 1s or 500ms, got {text!r}") from None


def start(args: argparse.Namespace, names: tuple[str, ...]) -> list[tuple[str, int]]:
    """What both commands do first: log as -v asks, work out where to serve (`serving_addresses`,
    refused here when wrong), and name in one line the flags given that change nothing (`ignored`)."""
    set_up_logging(args)
    addresses = serving_addresses(args)
    if unused := ignored(args, names):
        log.info("accepted for Volcano's chart, changing nothing here: %s", " ".join(unused))
    return addresses


def set_up_logging(args: argparse.Namespace) -> None:
    """INFO to stderr; with -v=4 or more, Caldera's own debug lines too (not every library's)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.verbosity >= 4:
        logging.getLogger("central").setLevel(logging.DEBUG)


# destinations of `add_common`'s flags that change nothing here
COMMON_IGNORED = ("logtostderr", "enable_healthz", "enable_metrics")


def ignored(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    """The flags among `add_common`'s and `names` (a command's own, as destinations) that change
    nothing here and that the command was given, as `--flag`s."""
    return [f"--{name.replace('_', '-')}" for name in (*COMMON_IGNORED, *names) if getattr(args, name, None) is not None]
