"""Entry point of the `caldera` console script.

Exit codes, the same for every subcommand: 0 success, 1 a negative answer the command exists
to give (`validate`: an object is denied), 2 bad input (one line naming the file, object and
field), 3 an internal error, that is a bug in Caldera: one line on stderr, no traceback unless
CALDERA_DEBUG=1 is set.
"""

from __future__ import annotations

import importlib
import os
import sys

# Subcommands owned by the node agent; everything else belongs to central.
_AGENT_COMMANDS = {"agent"}
INTERNAL_ERROR = 3


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("-"):
        args = importlib.import_module("central.cli").hoist_globals(args)
    try:
        code: int
        if args and args[0] in _AGENT_COMMANDS:
            code = importlib.import_module("nodeagent.cli").main(args[1:])
        else:
            code = importlib.import_module("central.cli").main(args)
        return code
    except (KeyboardInterrupt, BrokenPipeError, SystemExit):
        raise
    except Exception as err:  # a bug: say so in one line, keep the exit code distinct from bad input
        if os.environ.get("CALDERA_DEBUG"):
            raise
        command = f"caldera {args[0]}" if args else "caldera"
        print(f"{command}: internal error (a bug in Caldera; CALDERA_DEBUG=1 shows the traceback): "
              f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}", file=sys.stderr)
        return INTERNAL_ERROR


def run() -> int:
    """Console-script entry: a closed stdout (`| head`) ends the command quietly."""
    try:
        return main()
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())
