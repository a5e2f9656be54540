import sys

from caldera.cli import run

sys.exit(run())
