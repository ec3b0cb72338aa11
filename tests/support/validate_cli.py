"""Running `python -m components.validate` as a user would: a separate process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.pulumi_cli import REPO


def run_validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "components.validate", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
