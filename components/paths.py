"""Where the program's files are, and how paths in a stack file are read."""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
"""Scripts and image sources that run on hosts and in containers."""


def project_path(path: str, project_dir: Path) -> Path:
    """A path from the stack file: `~` expanded, relative ones taken from the project directory."""
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else project_dir / candidate
