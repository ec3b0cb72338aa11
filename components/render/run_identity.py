"""What a training run is (pure): exactly what changes its result. Its key names the run's
directory and decides whether a run goes on from an earlier one's checkpoint; where it runs
from (ports, the master's address), how it is watched and where its results go are not part
of it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

PLACE_FLAGS = frozenset({"--master_addr", "--master_port", "--ssh_port"})
"""The launcher's flags that say where the run is reached, not what it computes."""


def training_argv(argv: Sequence[str]) -> list[str]:
    """The deepspeed command line without the values of PLACE_FLAGS."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in PLACE_FLAGS:
            skip = True
        else:
            kept.append(arg)
    return kept


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run_identity(
    *,
    argv: Sequence[str],
    ds_config: str,
    dataset_info: str | None,
    hostfile: str,
    image: str,
    inputs: str,
) -> dict[str, Any]:
    """The run's identity: the training's command line (PLACE_FLAGS left out), the DeepSpeed
    config, the dataset registry, the ranks and their hosts (the hostfile), the image (its
    content tag: the build context and arguments) and the workload inputs' manifest digest
    (components.hosts.input_manifest). Kept as identity.json in the run's directory."""
    return {
        "argv": training_argv(argv),
        "ds_config_sha256": digest(ds_config),
        "dataset_info_sha256": digest(dataset_info) if dataset_info is not None else None,
        "hostfile": hostfile.splitlines(),
        "image": image,
        "inputs_sha256": inputs,
    }


def identity_text(identity: dict[str, Any]) -> str:
    """The identity as one canonical JSON line."""
    return json.dumps(identity, sort_keys=True, separators=(",", ":"))


def identity_key(identity: dict[str, Any]) -> str:
    """12 hex digits of the identity's digest: the end of the run's name."""
    return digest(identity_text(identity))[:12]
