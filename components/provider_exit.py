"""The dynamic provider ends without the interpreter's teardown.

At the end of every `preview`, `up` and `destroy` the engine interrupts the dynamic provider
(`pulumi.dynamic.__main__` then stops its gRPC server and returns) and waits for the process
to exit. By then every request has been answered and, before exit handlers run, Python has
joined every worker thread; what is left is tearing down modules and gRPC's core, ~80 ms of
the user's wait each time. So the provider's last exit handler runs the others, flushes the
standard streams and ends the process. After an uncaught exception (`sys.last_value` set) the
normal teardown and its exit status are kept.
"""

from __future__ import annotations

import atexit
import os
import sys


def _exit_without_teardown() -> None:
    if hasattr(sys, "last_value"):
        return
    atexit.unregister(_exit_without_teardown)
    atexit._run_exitfuncs()  # the handlers registered before this one, which os._exit would skip
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def exit_without_teardown() -> None:
    """From now on, a normal end of this process skips module teardown (exit status 0)."""
    atexit.register(_exit_without_teardown)
