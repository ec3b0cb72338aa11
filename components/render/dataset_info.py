"""``dataset_info.json``: LLaMA-Factory's dataset registry, made from ``training.workload.datasets``.

LLaMA-Factory reads ``<dataset_dir>/dataset_info.json`` and joins each ``file_name`` to
``dataset_dir``; an absolute ``file_name`` stays as it is (``os.path.join``). The file is
therefore placed in the run directory of every container (each node's first rank loads the
data) and names the data by its absolute path in the container, under the mounted
``dataset_dir``, which stays read-only and untouched.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from components.config import LlamaFactoryWorkload


def dataset_file(workload: LlamaFactoryWorkload, file_name: str) -> str:
    """A dataset's path in the container: ``file_name`` if absolute, else under dataset_dir's target."""
    if file_name.startswith("/") or workload.dataset_dir is None:
        return file_name
    return posixpath.join(workload.dataset_dir.target, file_name)


def dataset_info(workload: LlamaFactoryWorkload) -> dict[str, dict[str, Any]]:
    """Name -> ``{"file_name", "formatting"[, "columns"]}``, in configuration order."""
    info: dict[str, dict[str, Any]] = {}
    for name, dataset in workload.datasets.items():
        entry: dict[str, Any] = {
            "file_name": dataset_file(workload, dataset.file_name),
            "formatting": dataset.formatting,
        }
        if dataset.columns:
            entry["columns"] = dict(dataset.columns)
        info[name] = entry
    return info


def render_dataset_info(workload: LlamaFactoryWorkload) -> str | None:
    """The file's text (2-space JSON, newline-terminated), or None without datasets."""
    if not workload.datasets:
        return None
    return json.dumps(dataset_info(workload), indent=2) + "\n"
