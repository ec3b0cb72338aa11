"""A host step's result: one JSON object on the last line of its stdout (the scripts print their
progress to stderr and only this to stdout). One rule for every step: a step that printed
nothing has no result (an empty one); a key its caller cannot do without is an error naming the
script (never the output, which may hold a secret)."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any


def step_result(stdout: str, script: str, required: Collection[str] = ()) -> dict[str, Any]:
    """SCRIPT's result, from its STDOUT; a ValueError naming SCRIPT when a REQUIRED key is missing."""
    lines = stdout.strip().splitlines()
    result = dict(json.loads(lines[-1])) if lines else {}
    missing = [key for key in required if key not in result]
    if missing:
        raise ValueError(f"{script} printed no {', '.join(missing)} in its result")
    return result
