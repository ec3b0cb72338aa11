"""Entry point for ``python -m lab``."""

import sys

from lab.cli import main

sys.exit(main())
