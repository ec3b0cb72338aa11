"""The ``deepspeed`` command line that starts training on the manager container, as argv.

``deepspeed --hostfile <hostfile> --master_addr <manager container address> --master_port
<port> <entrypoint> <ds_config flag> <ds_config path> <workload arguments>``. The master
address is always given: without it the launcher takes the first address ``hostname -I``
prints on the first host, which in an overlay container may be docker_gwbridge's.
Returned as a list; whoever runs it on a remote shell quotes it with ``shlex.join``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from components.config.address_plan import AddressPlan
from components.config import ArgValue, LabConfig, LlamaFactoryWorkload, ScriptWorkload
from components.render.results import RUN_OUTPUT_DIR


def format_flag_value(value: ArgValue) -> str:
    """A flag value as LLaMA-Factory's ``HfArgumentParser`` reads it.

    Booleans are written ``true``/``false``: for ``bool`` fields the parser takes an
    optional value through ``string_to_bool`` (so ``--do_train true`` equals ``--do_train``),
    and for ``Optional[bool]`` fields it requires one, so an explicit value is the form
    that works for both, and the only one that can say false.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def llamafactory_flags(args: Mapping[str, ArgValue]) -> list[str]:
    """``{"stage": "sft", "do_train": True}`` -> ``["--stage", "sft", "--do_train", "true"]``."""
    flags: list[str] = []
    for key, value in args.items():
        flags += [f"--{key}", format_flag_value(value)]
    return flags


def workload_argv(
    workload: ScriptWorkload | LlamaFactoryWorkload, ds_config_path: str
) -> list[str]:
    """The entry point, the ds_config flag and path, then the workload's own arguments.

    A LLaMA-Factory workload with ``datasets`` also gets ``--dataset_dir`` = the folder of
    ``ds_config_path``: the generated ``dataset_info.json`` is placed beside ds_config.json.
    Its ``--output_dir`` (a script's ``output_dir_flag``) is the run's own directory
    (components.render.results), named when the run starts.
    """
    if isinstance(workload, ScriptWorkload):
        output = [workload.output_dir_flag, RUN_OUTPUT_DIR] if workload.output_dir_flag else []
        return [
            workload.entrypoint,
            workload.deepspeed_config_flag,
            ds_config_path,
            *workload.args,
            *output,
        ]
    args = {**workload.args, "output_dir": RUN_OUTPUT_DIR}
    if workload.datasets:
        args["dataset_dir"] = posixpath.dirname(ds_config_path)
    return [
        workload.entrypoint,
        "--deepspeed",
        ds_config_path,
        *llamafactory_flags(args),
    ]


def launch_argv(
    *,
    hostfile_path: str,
    master_addr: str,
    master_port: int,
    workload: ScriptWorkload | LlamaFactoryWorkload,
    ds_config_path: str,
    launcher_args: Sequence[str] = (),
) -> list[str]:
    """The full ``deepspeed`` argv; ``launcher_args`` go before the entry point (e.g. ``--ssh_port``)."""
    return [
        "deepspeed",
        "--hostfile",
        hostfile_path,
        "--master_addr",
        master_addr,
        "--master_port",
        str(master_port),
        *launcher_args,
        *workload_argv(workload, ds_config_path),
    ]


def ssh_port_args(config: LabConfig) -> list[str]:
    """``--ssh_port P`` when the containers' sshd is not on 22 (host mode)."""
    port = config.container_ssh_port
    return [] if port == 22 else ["--ssh_port", str(port)]


ALLREDUCE_BENCH = "/opt/dslab/allreduce_bench.py"
"""The preflight's all-reduce program in the image."""


def preflight_argv_for(config: LabConfig, hostfile_path: str, plan: AddressPlan) -> list[str]:
    """The ``deepspeed`` argv of the preflight's all-reduce: the training's hostfile, master
    address and port (free again once the preflight ends), running allreduce_bench.py."""
    preflight = config.training.preflight
    return [
        "deepspeed",
        "--hostfile",
        hostfile_path,
        "--master_addr",
        config.node_address(config.manager.name, plan),
        "--master_port",
        str(config.training.master_port),
        *ssh_port_args(config),
        ALLREDUCE_BENCH,
        "--sizes-mb",
        ",".join(f"{size:g}" for size in preflight.sizes_mb),
        "--iters",
        "5",
        "--timeout-s",
        str(preflight.run_timeout or 1800),
    ]


def launch_argv_for(
    config: LabConfig, hostfile_path: str, ds_config_path: str, plan: AddressPlan
) -> list[str]:
    """:func:`launch_argv` with the lab's manager address, port, ssh port and workload."""
    return launch_argv(
        hostfile_path=hostfile_path,
        master_addr=config.node_address(config.manager.name, plan),
        master_port=config.training.master_port,
        workload=config.training.workload,
        ds_config_path=ds_config_path,
        launcher_args=ssh_port_args(config),
    )
