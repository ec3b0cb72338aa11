"""The workload's inputs (model, datasets) are the same on every host: each host's manifest, as
the probe read it (components.hosts.probe), compared with the manager's before anything is
planned; its digest is part of the run's identity (components.render.run_identity)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from components.hosts.probe import InputFile


class InputsDiffer(Exception):
    """A host's copy of the inputs is not the manager's."""


def manifest_digest(files: Sequence[InputFile]) -> str:
    """sha256 of the manifest: every file's input, path, size and digest, in order."""
    text = "".join(f"{file.input}\t{file.path}\t{file.size}\t{file.sha256}\n" for file in files)
    return hashlib.sha256(text.encode()).hexdigest()


def described(file: InputFile | None) -> str:
    return "missing" if file is None else f"{file.size} bytes, sha256 {file.sha256[:12]}"


def first_difference(
    reference: Sequence[InputFile], other: Sequence[InputFile], roots: Sequence[str]
) -> tuple[str, InputFile | None, InputFile | None] | None:
    """The first file (in order) that differs between two manifests: its path on the host
    (ROOTS: the input directories) and each side's entry; None when they are the same."""
    left = {(file.input, file.path): file for file in reference}
    right = {(file.input, file.path): file for file in other}
    for where in sorted(left.keys() | right.keys()):
        if left.get(where) != right.get(where):
            index, path = where
            root = roots[index] if index < len(roots) else f"input {index}"
            return (root if path == "." else f"{root.rstrip('/')}/{path}", left.get(where), right.get(where))
    return None


def check_same_inputs(
    manifests: Mapping[str, Sequence[InputFile]], reference_host: str, roots: Sequence[str]
) -> None:
    """Raises InputsDiffer naming the first host (in name order) whose copy differs from
    REFERENCE_HOST's, and the first file that differs. Hosts that did not answer are left out."""
    reference = manifests.get(reference_host)
    if reference is None:
        return
    for host in sorted(manifests):
        found = first_difference(reference, manifests[host], roots)
        if host != reference_host and found is not None:
            path, ours, theirs = found
            raise InputsDiffer(
                f"{host}'s copy of the training inputs differs from {reference_host}'s: {path} is "
                f"{described(theirs)} on {host}, {described(ours)} on {reference_host}; copy the same files to every host"
            )


def inputs_digest(manifests: Mapping[str, Sequence[InputFile]], reference_host: str) -> str:
    """The digest of the inputs as the reference host holds them (or, when it did not answer,
    another host's: they are the same once checked); of nothing when no host told."""
    for host in (reference_host, *sorted(manifests)):
        if host in manifests:
            return manifest_digest(manifests[host])
    return manifest_digest(())
