"""Progress lines for long test steps, written past pytest's capture to its terminal: a
suite that runs `pulumi up` for minutes says what it is waiting for instead of going silent."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class LineWriter(Protocol):
    def write_line(self, line: str) -> None: ...


class CaptureSuspender(Protocol):
    def global_and_fixture_disabled(self) -> AbstractContextManager[None]: ...


_terminal: list[tuple[LineWriter, CaptureSuspender | None]] = []


def attach(terminal: LineWriter, capture: CaptureSuspender | None) -> None:
    """Called once by tests/conftest.py with pytest's terminal reporter and capture manager
    (None when capturing is off: `-p no:capture`)."""
    _terminal[:] = [(terminal, capture)]


def say(line: str) -> None:
    """One line on the terminal, with the test's output capture suspended for it (nothing
    outside a pytest run)."""
    for terminal, capture in _terminal:
        with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
            terminal.write_line(line)
