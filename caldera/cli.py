"""Entry point of the `caldera` console script."""

from __future__ import annotations

import importlib
import sys

# Subcommands owned by the node agent; everything else belongs to central.
_AGENT_COMMANDS = {"agent"}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("-"):
        args = importlib.import_module("central.cli").hoist_globals(args)
    if args and args[0] in _AGENT_COMMANDS:
        owner = importlib.import_module("nodeagent.cli")
        return owner.main(args[1:])
    owner = importlib.import_module("central.cli")
    return owner.main(args)


def run() -> int:
    """Console-script entry: a closed stdout (`| head`) ends the command quietly."""
    try:
        return main()
    except BrokenPipeError:
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(run())
