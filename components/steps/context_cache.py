"""Where the image steps keep a build context for the engine to build from: a directory named
by the tag's content hash (components.render.build_context), made once, reused by every later
run, and pruned when no stack has used it for a while. Written by the step that sends it, so
that rendering stays free of side effects."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

CONTEXT_KEEP_DAYS = 14
"""A context directory no stack has used for this long is removed when another is made."""


def contexts_dir() -> Path:
    """Where build contexts are kept: this user's cache, outside any checkout."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dslab" / "build-contexts"


def context_dir(entries: dict[str, dict[str, Any]], tag: str) -> Path:
    """The context as a directory named by the tag's content hash: `docker.RemoteImage` sends
    a directory to the engine, and a name that changes exactly when the content does is what
    tells it to build again. Made once (whole, or not at all), reused by every later run."""
    parent = contexts_dir()
    target = parent / tag.replace("/", "_").replace(":", "-")
    if target.is_dir():
        os.utime(target)  # in use: not pruned
        return target
    parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=parent))
    try:
        for name, entry in entries.items():
            destination = partial / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            if "content" in entry:
                destination.write_text(entry["content"], encoding="utf-8")
            elif Path(entry["path"]).is_dir():
                shutil.copytree(entry["path"], destination)
            else:
                shutil.copy2(entry["path"], destination)
        partial.rename(target)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not target.is_dir():  # else another run made it first
            raise
    _prune(parent, keep=target)
    return target


def _prune(parent: Path, keep: Path) -> None:
    oldest = time.time() - CONTEXT_KEEP_DAYS * 86400
    for path in parent.iterdir():
        if path != keep and path.is_dir() and path.stat().st_mtime < oldest:
            shutil.rmtree(path, ignore_errors=True)
