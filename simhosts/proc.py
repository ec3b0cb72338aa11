"""Running commands: argument lists only, output captured, failures explained."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

Log = Callable[[str], None]
"""Where progress lines go (the CLI prints them; tests may collect them)."""


class CommandError(RuntimeError):
    """A command exited non-zero; the message carries its argv and stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        tail = stderr.strip().splitlines()[-5:]
        super().__init__(f"{' '.join(argv)} exited {returncode}: " + " | ".join(tail))


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    input_text: str | None = None,
    timeout: float | None = 600,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` and return its captured text output; raise CommandError on failure.

    ``env`` adds variables to the inherited environment.
    """
    full_env = {**os.environ, **env} if env else None
    result = subprocess.run(
        list(argv), input=input_text, capture_output=True, text=True, timeout=timeout, check=False, env=full_env
    )
    if check and result.returncode != 0:
        raise CommandError(argv, result.returncode, result.stderr)
    return result


def ok(argv: Sequence[str], timeout: float | None = 60) -> bool:
    """Return whether ``argv`` exits zero (output discarded)."""
    try:
        return run(argv, check=False, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def docker(*args: str, check: bool = True, timeout: float | None = 600) -> str:
    """Run the docker CLI against the machine's engine and return its stdout, stripped."""
    return run(["docker", *args], check=check, timeout=timeout).stdout.strip()


def pipe(producer: Sequence[str], consumer: Sequence[str], timeout: float = 600) -> None:
    """Run ``producer | consumer`` without a shell; raise if either fails."""
    with subprocess.Popen(list(producer), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as prod:
        assert prod.stdout is not None
        cons = subprocess.run(
            list(consumer), stdin=prod.stdout, capture_output=True, text=True, timeout=timeout, check=False
        )
        prod.stdout.close()
        prod_err = _read(prod.stderr)
        prod.wait(timeout=timeout)
    if prod.returncode != 0:
        raise CommandError(producer, prod.returncode, prod_err)
    if cons.returncode != 0:
        raise CommandError(consumer, cons.returncode, cons.stderr)


def feed_file(path: Path, consumer: Sequence[str], timeout: float = 600) -> None:
    """Run ``consumer < path``; raise if it fails."""
    with path.open("rb") as stream:
        result = subprocess.run(list(consumer), stdin=stream, capture_output=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise CommandError(consumer, result.returncode, result.stderr.decode(errors="replace"))


def _read(stream: IO[bytes] | None) -> str:
    return stream.read().decode(errors="replace") if stream is not None else ""
