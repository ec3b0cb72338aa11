"""One run of a source command whose output several receivers read, each from its first byte.

Build-once ships the manager's image to every worker: one `docker save` on the manager,
however many workers load it. The bytes are spooled to an unlinked temporary file on this
machine as they come, so a receiver that starts while the run is under way (the engine
does not start every worker's copy at the same instant) replays what it missed instead of
starting a second `docker save`. The spool goes when the last receiver is done.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CHUNK = 1 << 20

Sink = Callable[[bytes], None]
Producer = Callable[[Sink], tuple[int, str]]
"""Runs the source, hands each piece of its stdout to the sink, returns (exit code, stderr)."""


class Abandoned(Exception):
    """Raised into the producer when every receiver has left: the source should stop."""


class SharedRun:
    """A producer running in a thread of its own, its output spooled for any number of readers."""

    def __init__(self, produce: Producer) -> None:
        self._spool = tempfile.TemporaryFile(prefix="dslab-spool-")
        self._changed = threading.Condition()
        self._size = 0
        self._done = False
        self._readers = 0
        self.exit_code = -1
        self.errors = ""
        self._thread = threading.Thread(target=self._run, args=(produce,), daemon=True)

    def join(self) -> None:
        """One more reader; the first starts the source. Called under the registry's lock."""
        self._readers += 1
        if self._readers == 1:
            self._thread.start()

    def leave(self) -> bool:
        """One reader fewer; True for the last one. Called under the registry's lock."""
        self._readers -= 1
        return self._readers == 0

    def _append(self, chunk: bytes) -> None:
        if self._readers == 0:
            raise Abandoned()
        self._spool.write(chunk)
        self._spool.flush()
        with self._changed:
            self._size += len(chunk)
            self._changed.notify_all()

    def _run(self, produce: Producer) -> None:
        try:
            self.exit_code, self.errors = produce(self._append)
        except Abandoned:
            self.errors = "every receiver stopped before the source ended"
        except Exception as error:  # a failure to start: every reader must hear of it
            self.errors = f"{type(error).__name__}: {error}"
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def chunks(self) -> Iterator[bytes]:
        """Everything the source wrote, from the first byte, until it ends."""
        offset = 0
        while True:
            with self._changed:
                while offset >= self._size and not self._done:
                    self._changed.wait()
                size = self._size
            if offset >= size:
                return
            chunk = os.pread(self._spool.fileno(), min(size - offset, CHUNK), offset)
            offset += len(chunk)
            yield chunk

    def wait(self) -> tuple[int, str]:
        """The source's exit code and stderr, once it has ended."""
        self._thread.join()
        return self.exit_code, self.errors

    def close(self) -> None:
        self._thread.join()
        self._spool.close()


_runs: dict[str, SharedRun] = {}
_runs_lock = threading.Lock()


@contextmanager
def shared_run(key: str, produce: Producer) -> Iterator[SharedRun]:
    """The run of `key` under way (joined, replayed from its start), or a new one."""
    with _runs_lock:
        run = _runs.get(key)
        if run is None:
            run = _runs[key] = SharedRun(produce)
        run.join()
    try:
        yield run
    finally:
        with _runs_lock:
            last = run.leave()
            if last:
                del _runs[key]
        if last:
            run.close()
