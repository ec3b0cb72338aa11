"""The linters run with the tests: ruff for style and mistakes, mypy for types."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.pulumi_cli import REPO


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def shell_scripts() -> list[Path]:
    folders = ("assets", "simhosts/assets", "toolchain", "tests/toolchain")
    return sorted(path for folder in folders for path in (REPO / folder).rglob("*.sh"))


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (make test installs it)")
def test_shellcheck_finds_nothing_in_any_script() -> None:
    result = subprocess.run(
        ["shellcheck", "-x", "--severity=warning", *map(str, shell_scripts()), str(REPO / "simhosts" / "engine.sh"), str(REPO / ".ci" / "run")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_every_shell_asset_parses() -> None:
    scripts = shell_scripts()
    assert scripts, "there are shell assets to check"
    for script in scripts:
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"{script.relative_to(REPO)}: {result.stderr}"
