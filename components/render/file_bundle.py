"""Text files for a step to place in a container, as one text read by
assets/host/container-place-files.sh: per file a header line `dslab-file MODE SIZE PATH`, then
its SIZE bytes. Plain text, so `pulumi preview --diff` shows which line of which file changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi


@dataclass(frozen=True)
class PlacedFile:
    content: pulumi.Input[str]
    mode: int = 0o644


def render_bundle(files: Mapping[str, tuple[str, int]]) -> str:
    """Absolute path -> (text, mode) as the bundle, in path order (a new order is no change)."""
    parts = []
    for path, (text, mode) in sorted(files.items()):
        if not path.startswith("/") or any(c.isspace() for c in path):
            raise ValueError(f"a placed file needs an absolute path without spaces, not {path!r}")
        data = text.encode("utf-8")
        parts.append(f"dslab-file {mode:04o} {len(data)} {path}\n{text}")
    return "".join(parts)


def bundle(files: Mapping[str, PlacedFile]) -> pulumi.Output[str]:
    """The bundle of FILES, whose contents may come from other resources."""
    paths = sorted(files)
    return pulumi.Output.all(*(files[path].content for path in paths)).apply(
        lambda texts: render_bundle({path: (str(text), files[path].mode) for path, text in zip(paths, texts, strict=True)})
    )
