"""`caldera down --dir DIR`: stop what `caldera up --dir DIR` started and remove DIR."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from central.localcluster.up import down


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", required=True, type=Path, help="the folder given to `caldera up`")


def run(args: argparse.Namespace) -> int:
    say = lambda line: print(f"caldera down: {line}", file=sys.stderr, flush=True)  # noqa: E731
    stopped = down(args.dir.resolve(), say=say)
    print(f"caldera down: stopped {stopped} process(es), removed {args.dir}", file=sys.stderr)
    return 0
