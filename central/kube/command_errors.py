"""How a command that talks to the API server reports a failure of the API or of the connection.

Shared by every such command (`caldera certs`, `job`, `queue`, `pod`), so each fails the same
way: one line on stderr naming the command, exit 1, never a traceback.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable

from central.errors import InputError


def api_errors(command: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Turn API and connection failures into one line on stderr and exit 1 (never a traceback);
    a 404 is the user's mistake and becomes an InputError (exit 2)."""
    def wrap(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(fn)
        def run(args: argparse.Namespace) -> int:
            from urllib3.exceptions import HTTPError

            from central.kube.client import ApiError

            try:
                return fn(args)
            except ApiError as err:
                if err.code == 404:
                    raise InputError("", err.message or "not found") from None
                if err.code == 0:
                    print(f"caldera {command}: error: cannot reach the API server: {err.message}", file=sys.stderr)
                else:
                    print(f"caldera {command}: error: {err}", file=sys.stderr)
            except (HTTPError, OSError) as err:
                print(f"caldera {command}: error: cannot reach the API server: {err}", file=sys.stderr)
            return 1
        return run
    return wrap
