"""`caldera agent`: run the node agent, or print one node report as JSON (`--once --output json`).

Every setting of the config schema is also a flag, in the kebab-case Kubernetes components
use: the key `qos.cpu_suppress.threshold_percent` is `--qos-cpu-suppress-threshold-percent 70`
(the dotted key, `--qos.cpu_suppress.threshold_percent`, is accepted too). Flags override the
YAML file given with --config.
A bad config is refused at start with one line naming the key, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format

from nodeagent.config import ConfigError, leaves, load_config
from nodeagent.report import full_report

log = logging.getLogger("nodeagent")

_UNSET = object()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caldera agent", description=__doc__.splitlines()[0],
                                     argument_default=argparse.SUPPRESS)
    parser.add_argument("--config", type=Path,
                        help="YAML file of settings, nested by the dotted keys of the flags below (the "
                             "DaemonSet mounts one from the ConfigMap caldera-nodeagent-config, "
                             "daemonset/nodeagent.yaml); default: none, built-in defaults")
    parser.add_argument("--once", action="store_true", help="collect once, print one full report and exit")
    parser.add_argument("--output", choices=["json"], default="json", help="format for --once (default: json)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="(default: INFO)")
    group = parser.add_argument_group("settings (override the config file; each also as --<dotted.key>)")
    for key, kind, default in leaves():
        group.add_argument(flag_name(key), dest=f"set:{key}", metavar=kind.__name__.upper(),
                           help=f"{key} (default: {default!r})")
        group.add_argument(f"--{key}", dest=f"set:{key}", help=argparse.SUPPRESS)  # the config key, as before
    return parser


def flag_name(key: str) -> str:
    """The flag of a config key: `qos.cpu_suppress.enabled` -> `--qos-cpu-suppress-enabled`."""
    return "--" + key.replace(".", "-").replace("_", "-")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    kinds = {key: kind for key, kind, _ in leaves()}
    out: dict[str, Any] = {}
    for dest, raw in vars(args).items():
        if dest.startswith("set:"):
            key = dest[4:]
            # Strings stay verbatim; other values are parsed as YAML scalars (true, 0.5, 9470).
            out[key] = raw if kinds[key] is str else yaml.safe_load(raw)
    return out


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=getattr(args, "log_level", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_config(getattr(args, "config", None), _overrides(args))
    except (ConfigError, yaml.YAMLError) as exc:
        print(f"caldera agent: config error: {exc}", file=sys.stderr)
        return 2
    if cfg.exporter.authorize and not cfg.kube.api_url:
        print("caldera agent: config error: exporter.authorize: needs kube.api_url (the API server reviews the tokens)",
              file=sys.stderr)
        return 2

    from nodeagent.agent import Agent

    agent = Agent(cfg)
    if getattr(args, "once", False):
        agent.tick(enforce=False)
        time.sleep(min(cfg.collect.period_s, 1.0))  # CPU figures need two samples
        report = full_report(agent.node_name, agent.tick(enforce=False))
        report.timestamp_unix_ms = int(time.time() * 1000)
        print(json.dumps(json_format.MessageToDict(report, preserving_proto_field_name=True), indent=2))
        return 0
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = None
    if cfg.exporter.enabled:
        from nodeagent.exporter import MetricsServer

        authorizer = None
        if cfg.exporter.authorize:
            from nodeagent.kube import KubeApi
            from nodeagent.metricsauth import MetricsAuthorizer

            authorizer = MetricsAuthorizer(KubeApi(cfg.kube.api_url, node_name="", token_file=Path(cfg.kube.token_file),
                                                   ca_file=Path(cfg.kube.ca_file) if cfg.kube.ca_file else None).create)
        server = MetricsServer(agent, cfg.exporter.address, cfg.exporter.port, cfg.exporter.max_pod_series,
                               authorizer)
        log.info("metrics on %s:%d", cfg.exporter.address, server.start())
    try:
        agent.run(stop)
    finally:
        if server is not None:
            server.stop()
    return 0
