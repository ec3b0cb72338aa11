"""Reading what `pulumi up` printed in a non-interactive terminal."""

from __future__ import annotations

import re


def diagnostics_of(output: str) -> str:
    """The Diagnostics section of Pulumi's output, up to the outputs or the resource count
    ("" when there is none: nothing was said outside the steps' progress)."""
    if "Diagnostics:" not in output:
        return ""
    start = output.index("Diagnostics:")
    ends = [output.find(marker, start) for marker in ("\nOutputs:", "\nResources:")]
    return output[start : min(end for end in ends if end != -1)]


# What a Command's script said while it ran, on its resource's progress line:
# " +  command:remote:Command lab-training-run creating (9s) training succeeded; ..."
COMMAND_LINE = re.compile(
    r"^\s*[-+~]*\s*command:(?:remote|local):Command (?P<name>\S+) \w+ \(\d+s\) (?P<message>\S.*)$"
)


def command_lines(output: str) -> dict[str, list[str]]:
    """What each Command said while it ran, by resource name, in order (each line once:
    the progress display repeats a step's last line when the step ends)."""
    said: dict[str, list[str]] = {}
    for line in output.splitlines():
        if found := COMMAND_LINE.match(line):
            lines = said.setdefault(found["name"], [])
            if not lines or lines[-1] != found["message"]:
                lines.append(found["message"])
    return said


# A line of the `Resources:` summary: "    ~ 1 updated", "    + 2 to create", "    35 unchanged".
SUMMARY_LINE = re.compile(r"^\s*[-+~]*\s*(?P<count>\d+) (?P<what>[a-z][a-z -]*?)\s*$")


def change_counts(output: str) -> dict[str, int]:
    """The last `Resources:` summary of a preview, up, refresh or destroy, e.g. ``{"updated": 1,
    "unchanged": 35}``; exact counts, where a substring check would take "11 updated" for "1 updated"."""
    if "Resources:" not in output:
        return {}
    block = output[output.rindex("Resources:") :].split("\n\n")[0]
    counts: dict[str, int] = {}
    for line in block.splitlines()[1:]:
        if found := SUMMARY_LINE.match(line):
            counts[found["what"]] = int(found["count"])
    return counts


# A line of `pulumi preview --diff` that plans or shows a change: "    ~ docker:index/...: (update)",
# "              + dns: []", "  +-docker:index/container:Container: (replace)".
CHANGE_LINE = re.compile(r"^\s*(?:\+-|-\+|[-+~]\s)\s*\S")
STACK_REFRESH = re.compile(r"^~ pulumi:pulumi:Stack: \(refresh\)$")
"""Pulumi's own line for the stack it refreshes, on every preview: not a change of ours."""


def diff_change_lines(output: str) -> list[str]:
    """The lines of a `preview --diff` that show something changing, but the stack's refresh
    line, up to the resource count (whose `~ 2 to update` lines are counts, not resources)."""
    body = output.split("\nResources:", 1)[0]
    return [line for line in body.splitlines() if CHANGE_LINE.match(line) and not STACK_REFRESH.match(line)]


def first_error_naming(output: str, *names: str) -> str:
    """The first line of OUTPUT that reports an error and names one of NAMES ("" when none does):
    what a user reads first about that host."""
    for line in output.splitlines():
        if "error" in line and any(name in line for name in names):
            return line
    return ""


PLANNED = re.compile(r"^\s*(?:\+-|-\+|[-+~])\s*\S+: \((?P<op>[a-z-]+)\)$")
URN = re.compile(r"^\s*\[urn=\S+::(?P<name>[^\]\s]+)\]$")


def planned_steps(output: str) -> dict[str, str]:
    """What a `preview --diff` plans, by resource name: update, replace, create, delete (the
    refresh's own reads left out)."""
    planned: dict[str, str] = {}
    operation = ""
    for line in output.splitlines():
        if found := PLANNED.match(line):
            operation = found["op"]
        elif operation and (found := URN.match(line)):
            if operation != "refresh":
                planned[found["name"]] = operation
            operation = ""
    return planned
