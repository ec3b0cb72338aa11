"""What a training run gets in the manager container (pure): the hostfile, ``ds_config.json``,
``dataset_info.json`` and ``.deepspeed_env``, and the ``deepspeed`` command lines of the run
and of the preflight's all-reduce. :class:`~components.lab.Lab` hands them to
DeepSpeedLaunch; ``bench/gpu_check.py`` runs the same on a GPU machine without Docker.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.config.address_plan import AddressPlan
from components.config import LabConfig, LlamaFactoryWorkload
from components.render.dataset_info import render_dataset_info
from components.render.deepspeed_env import deepspeed_environment, render_deepspeed_env
from components.render.ds_config import render_ds_config
from components.render.hostfile import render_hostfile
from components.render.launch_argv import launch_argv_for, preflight_argv_for

RUN_DIR = "/opt/dslab/run"
"""Where the hostfile, ds_config.json, dataset_info.json, the log and the status file live in
the manager container (and the hostfile and ds_config.json in every container)."""

DEEPSPEED_ENV_PATH = "/root/.deepspeed_env"
"""Where ``.deepspeed_env`` is placed in the manager container: root's home, which DeepSpeed's
launcher reads first (then its working directory's)."""

IMAGE_PATH = "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH inside the training image (its venv first); remote ranks get it from .deepspeed_env."""


@dataclass(frozen=True)
class RunFiles:
    """The run's files (text) and command lines, as placed in and run from the manager container."""

    hostfile: str
    ds_config: str
    dataset_info: str | None
    """None unless a LLaMA-Factory workload registers datasets."""
    argv: tuple[str, ...]
    """The training's ``deepspeed`` command line."""
    preflight_argv: tuple[str, ...]
    """The preflight all-reduce's ``deepspeed`` command line."""


def run_files(config: LabConfig, plan: AddressPlan) -> RunFiles:
    """Everything but ``.deepspeed_env`` (which names an interface found at run time), with
    the manager's address in ``plan`` as the master address."""
    workload = config.training.workload
    return RunFiles(
        hostfile=render_hostfile(config.hosts, by_address=config.network.mode != "overlay"),
        ds_config=render_ds_config(config.training.deepspeed),
        dataset_info=render_dataset_info(workload) if isinstance(workload, LlamaFactoryWorkload) else None,
        argv=tuple(launch_argv_for(config, f"{RUN_DIR}/hostfile", f"{RUN_DIR}/ds_config.json", plan)),
        preflight_argv=tuple(preflight_argv_for(config, f"{RUN_DIR}/hostfile", plan)),
    )


def run_deepspeed_env(config: LabConfig, socket_ifname: str) -> str:
    """``.deepspeed_env`` for ranks whose NCCL/gloo traffic goes through ``socket_ifname``."""
    return render_deepspeed_env(deepspeed_environment(config, socket_ifname, IMAGE_PATH))
