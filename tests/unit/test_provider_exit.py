"""The provider's exit without teardown (components/provider_exit.py), in real processes:
the other exit handlers still run, buffered output still arrives, a crash keeps its status."""

from __future__ import annotations

import subprocess
import sys

from harness.pulumi_cli import REPO

PROCESS = """
import atexit
from components.provider_exit import exit_without_teardown

atexit.register(lambda: print("[handler registered earlier ran]", flush=True))
exit_without_teardown()
print("[unflushed output]", end="")
{end}
"""


def run_process(end: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROCESS.format(end=end)], cwd=REPO, capture_output=True, text=True, timeout=60
    )


def test_a_normal_end_runs_the_other_handlers_and_delivers_buffered_output() -> None:
    completed = run_process(end="")
    assert completed.returncode == 0, completed.stderr
    assert "[unflushed output]" in completed.stdout
    assert "[handler registered earlier ran]" in completed.stdout


def test_a_crash_keeps_its_traceback_and_exit_status() -> None:
    completed = run_process(end="raise RuntimeError('provider broke')")
    assert completed.returncode == 1
    assert "RuntimeError: provider broke" in completed.stderr
    assert "[handler registered earlier ran]" in completed.stdout
