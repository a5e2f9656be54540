"""`python -m nodeagent` is `caldera agent`."""

import sys

from nodeagent.cli import main

sys.exit(main(sys.argv[1:]))
