"""LocalFile: a file on the operator's machine whose bytes come from the stack (a dynamic resource).

Used for what training leaves that people would rather open than read, such as the loss
curve. Its diff looks at the file itself, so a deleted or edited copy is written again by
the next `pulumi up`, and an intact one changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: str, content_base64: str) -> str:
    """Writes the file (atomically); no content means no file. Returns the digest or ""."""
    target = Path(path)
    if not content_base64:
        target.unlink(missing_ok=True)
        return ""
    data = base64.b64decode(content_base64)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_bytes(data)
    partial.replace(target)
    return _digest(data)


def _on_disk_digest(path: str) -> str | None:
    try:
        return _digest(Path(path).read_bytes())
    except OSError:
        return None


class LocalFileProvider(ResourceProvider):
    """Writes, rewrites and removes the file; the state keeps its path and sha256."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        digest = _write(props["path"], props["content_base64"])
        return CreateResult(id_=props["path"], outs={**props, "sha256": digest})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = ["path"] if olds.get("path") != news.get("path") else []
        wanted = _digest(base64.b64decode(news["content_base64"])) if news.get("content_base64") else None
        stale = _on_disk_digest(news["path"]) != wanted
        return DiffResult(changes=bool(replaces) or stale, replaces=replaces, delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**news, "sha256": _write(news["path"], news["content_base64"])})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        Path(props["path"]).unlink(missing_ok=True)


class LocalFile(Resource, module="dslab", name="LocalFile"):
    """The file at `path` holds the bytes of `content_base64` (no file when it is empty).

    Outputs:
        path: where the file is.
        sha256: its content's digest; "" when there is no file.
    """

    path: pulumi.Output[str]
    sha256: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        path: pulumi.Input[str],
        content_base64: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            LocalFileProvider(),
            name,
            {"path": path, "content_base64": content_base64, "sha256": None},
            opts,
        )
