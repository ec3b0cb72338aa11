"""The program ends quietly when the engine interrupts it.

When a step fails, the engine stops the program with SIGINT while the program still waits on
the engine for the resources it registered. Python's default answer, KeyboardInterrupt, runs
into those waits and prints three chained tracebacks of the SDK and the language host (~60
lines, shown live and again under "Diagnostics") above the one error that says what failed.
The program has nothing left to do or save at that point: the engine holds the state.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

INTERRUPTED_EXIT = 130
"""128 + SIGINT, what a shell reports for a command ended by ^C."""


def _end(_signal: int, _frame: FrameType | None) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT)


def end_quietly_on_interrupt() -> None:
    """From now on SIGINT ends this process at once, without a traceback."""
    signal.signal(signal.SIGINT, _end)
