"""Progress lines for long test steps, written past pytest's capture to its terminal: a
suite that runs `pulumi up` for minutes says what it is waiting for instead of going silent."""

from __future__ import annotations

from typing import Protocol


class LineWriter(Protocol):
    def write_line(self, line: str) -> None: ...


_terminal: list[LineWriter] = []


def attach(terminal: LineWriter) -> None:
    """Called once by tests/conftest.py with pytest's terminal reporter."""
    _terminal[:] = [terminal]


def say(line: str) -> None:
    """One line on the terminal (nothing outside a pytest run)."""
    for terminal in _terminal:
        terminal.write_line(line)
