"""`caldera version`, as `vcctl version`."""

from __future__ import annotations

import argparse
import platform
from importlib.metadata import PackageNotFoundError, version


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    try:
        number = version("caldera")
    except PackageNotFoundError:
        number = "unknown (not installed)"
    print("API Version: batch.volcano.sh/v1alpha1, scheduling.volcano.sh/v1beta1")
    print(f"Version: {number}")
    print(f"Python: {platform.python_version()}")
    return 0
