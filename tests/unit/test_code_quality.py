"""The linters run with the tests: ruff for style and mistakes, mypy for types."""

from __future__ import annotations

import subprocess
import sys

from tests.support.pulumi_cli import REPO


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_shell_asset_parses() -> None:
    scripts = sorted(
        path for folder in ("assets", "lab/assets", "toolchain", "tests/toolchain") for path in (REPO / folder).rglob("*.sh")
    )
    assert scripts, "there are shell assets to check"
    for script in scripts:
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{script.relative_to(REPO)}: {result.stderr}"
