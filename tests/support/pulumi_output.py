"""Reading what `pulumi up` printed in a non-interactive terminal."""

from __future__ import annotations

import re

# A progress line of one of our steps: "[server1: deepspeed] ..." (components.remote_script).
STEP_LINE = re.compile(r"^\s*\[(?P<step>[^\]]+)\] ")


def diagnostics_of(output: str) -> str:
    """The Diagnostics section of Pulumi's output, up to the outputs or the resource count."""
    start = output.index("Diagnostics:")
    ends = [output.find(marker, start) for marker in ("\nOutputs:", "\nResources:")]
    return output[start : min(end for end in ends if end != -1)]


def step_lines(diagnostics: str) -> dict[str, list[str]]:
    """The progress lines in DIAGNOSTICS, by step label."""
    steps: dict[str, list[str]] = {}
    for line in diagnostics.splitlines():
        if found := STEP_LINE.match(line):
            steps.setdefault(found["step"], []).append(line.strip())
    return steps
