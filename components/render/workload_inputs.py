"""What a workload needs on every host: its model and dataset directories (pure).

They are bind-mounted into every container at the same path, and must exist on every host
before the containers start: ``docker run --volume`` would otherwise create an empty
directory in their place, and training would fail much later, on one rank, with a message
that names neither the host nor the path.
"""

from __future__ import annotations

import posixpath

from components.config import LabConfig, LlamaFactoryWorkload, Mount


def workload_mounts(config: LabConfig) -> tuple[Mount, ...]:
    """The workload's model and dataset_dir mounts (none for a script workload)."""
    workload = config.training.workload
    if not isinstance(workload, LlamaFactoryWorkload):
        return ()
    return tuple(mount for mount in (workload.model, workload.dataset_dir) if mount is not None)


def input_roots(config: LabConfig) -> list[str]:
    """The host directories of the workload's inputs (model, dataset_dir), whose files every
    host must hold alike: the probe reads a manifest of each (components.hosts.input_manifest)."""
    return [mount.source for mount in workload_mounts(config)]


def required_paths(config: LabConfig) -> list[tuple[str, str]]:
    """(what it is, path on the host) for every input each host must hold.

    The model and dataset directories must exist and not be empty; each registered dataset
    under dataset_dir must exist too (a file or a folder).
    """
    workload = config.training.workload
    if not isinstance(workload, LlamaFactoryWorkload):
        return []
    paths: list[tuple[str, str]] = []
    if workload.model is not None:
        paths.append(("model directory (training.workload.model.source)", workload.model.source))
    if workload.dataset_dir is not None:
        source = workload.dataset_dir.source
        paths.append(("dataset directory (training.workload.dataset_dir.source)", source))
        for name, dataset in workload.datasets.items():
            if not dataset.file_name.startswith("/"):
                paths.append(
                    (f"dataset {name} (training.workload.datasets.{name}.file_name)",
                     posixpath.join(source, dataset.file_name))
                )
    return paths
