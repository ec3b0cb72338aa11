"""The program's answer to the engine's SIGINT (components/interrupt.py), in a real process that
is stopped while its threads wait, as the program's are when a step fails."""

from __future__ import annotations

import signal
import subprocess
import sys

from components.interrupt import INTERRUPTED_EXIT
from harness.pulumi_cli import REPO

WAITING_PROGRAM = """
import sys, threading
from components.interrupt import end_quietly_on_interrupt
{install}
print("waiting", flush=True)
threading.Event().wait(60)
"""


def interrupted(install: str) -> subprocess.CompletedProcess[str]:
    # SIGINT as the program gets it from the engine: not ignored, whatever this test runs under
    # (a shell's background job, nohup or a CI runner hand their children SIGINT ignored, and
    # Python then leaves it so).
    process = subprocess.Popen(
        [sys.executable, "-c", WAITING_PROGRAM.format(install=install)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert process.stdout is not None and process.stdout.readline() == "waiting\n"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def test_without_it_python_answers_sigint_with_a_traceback() -> None:
    completed = interrupted(install="")
    assert "KeyboardInterrupt" in completed.stderr and "Traceback" in completed.stderr


def test_sigint_ends_the_program_at_once_without_a_traceback() -> None:
    completed = interrupted(install="end_quietly_on_interrupt()")
    assert completed.returncode == INTERRUPTED_EXIT
    assert completed.stderr == ""
