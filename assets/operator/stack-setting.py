#!/usr/bin/env python3
"""Prints one setting of a stack file as the file says it now (`pulumi destroy` runs no program):
SECTION.FIELD of the `dslab:SECTION` mapping, or DEFAULT when the file does not set it; nothing
when the file cannot be read (the caller keeps what the last `up` applied).

usage: stack-setting.py STACK_FILE SECTION.FIELD DEFAULT
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import yaml


def setting(text: str, key: str, default: str) -> str:
    section, _, field = key.partition(".")
    document = yaml.safe_load(text) or {}
    values = (document.get("config") or {}).get(f"dslab:{section}") or {}
    value = values.get(field, default) if isinstance(values, dict) else default
    return str(value)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    try:
        with open(argv[1], encoding="utf-8") as stack_file:
            text = stack_file.read()
        print(setting(text, argv[2], argv[3]))
    except (OSError, yaml.YAMLError, AttributeError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
