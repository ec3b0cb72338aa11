"""Writes the configuration reference and the stack file's JSON Schema from the configuration
models: ``python -m components.reference`` (``--check``: write nothing, exit 1 when either file
is not what the models make)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from components.config.field_reference import REFERENCE_PATH, reference_text
from components.config.stack_schema import SCHEMA_PATH, schema_text

PROJECT_DIR = Path(__file__).resolve().parent.parent
COMMAND = "python -m components.reference"


def generated() -> dict[str, str]:
    """Path relative to the project directory -> the text the models make for it."""
    return {REFERENCE_PATH: reference_text(), SCHEMA_PATH: schema_text()}


def stale(project_dir: Path = PROJECT_DIR) -> list[str]:
    """The generated files whose text on disk is not what the models make."""
    return [
        path
        for path, text in generated().items()
        if not (project_dir / path).is_file() or (project_dir / path).read_text(encoding="utf-8") != text
    ]


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, project_dir: Path = PROJECT_DIR) -> int:
    """Write (or with --check, compare) the generated files; return the exit status."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    args = parser.parse_args(argv)
    if args.check:
        found = stale(project_dir)
        for path in found:
            print(f"{path} is stale: run {COMMAND}", file=out)
        return 1 if found else 0
    for path, text in generated().items():
        target = project_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {path}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
