import sys

from caldera.cli import main

sys.exit(main())
