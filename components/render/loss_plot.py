"""Where LLaMA-Factory draws its loss curve (in the manager container: in the run's directory,
on the manager host), and where its copy goes on the operator's machine (pure)."""

from __future__ import annotations

import posixpath
from pathlib import Path

from components.config import LlamaFactoryWorkload, ScriptWorkload
from components.render.results import RUN_OUTPUT_DIR

LOSS_PLOT_NAME = "training_loss.png"
"""The file `--plot_loss true` writes into the output directory when training ends."""


def loss_plot_in_container(workload: ScriptWorkload | LlamaFactoryWorkload) -> str | None:
    """`<the run's directory>/training_loss.png` when the workload plots its loss, else None
    (with the run's name still a token: components.render.results)."""
    if not isinstance(workload, LlamaFactoryWorkload):
        return None
    if workload.args.get("plot_loss") not in (True, "true", "True"):
        return None
    return posixpath.join(RUN_OUTPUT_DIR, LOSS_PLOT_NAME)


def loss_plot_on_host(results_dir: str, run: str) -> str:
    """The curve a run drew, in its directory on the manager host."""
    return posixpath.join(results_dir, run, LOSS_PLOT_NAME)


def loss_plot_copy(project_dir: Path, stack: str) -> Path:
    """The operator's copy: `outputs/<stack>/training_loss.png` in the project."""
    return project_dir / "outputs" / stack / LOSS_PLOT_NAME
