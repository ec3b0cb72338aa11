"""Entry point for ``python -m simhosts``."""

import sys

from simhosts.cli import main

sys.exit(main())
