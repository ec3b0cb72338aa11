"""ContainerFiles: text files the program places in a running container, kept as placed."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

import pulumi

from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class PlacedFile:
    content: pulumi.Input[str]
    mode: int = 0o644


def checksum_line(name: str, content: str) -> str:
    """A `sha256sum --check` line for NAME holding CONTENT (as the archive writes it)."""
    return f"{hashlib.sha256(content.encode()).hexdigest()}  {name}"


def container_files(
    name: str,
    *,
    label: str,
    connection: pulumi.Input[dict[str, Any]],
    container_name: str,
    dest: str,
    files: dict[str, PlacedFile],
    triggers: list[pulumi.Input[Any]],
    opts: pulumi.ResourceOptions,
) -> RemoteScript:
    """Places FILES (names relative to DEST) in the container through `docker exec`. Every
    refresh compares them with what was placed: one removed or changed inside the container
    is placed again by the next `up`, in place, so what depends on this resource (the run
    that reads them) is not redone. New content or new TRIGGERS place them anew."""
    return RemoteScript(
        name,
        label=label,
        connection=connection,
        create=script_call("host/container-put-files.sh", container_name, dest),
        read=script_call(
            "host/container-files-read.sh",
            container_name,
            dest,
            *[
                pulumi.Output.from_input(file.content).apply(functools.partial(checksum_line, path))
                for path, file in sorted(files.items())
            ],
        ),
        stdin_archive={path: {"content": file.content, "mode": file.mode} for path, file in files.items()},
        triggers=triggers,
        repair_in_place=True,
        opts=opts,
    )
