"""`dslab:training`: the workload (a script or LLaMA-Factory), DeepSpeed's settings, the preflight.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from components.config.base import FrozenModel, Problems, is_true
from components.config.fields import (
    AbsolutePath,
    Argument,
    AutoOrNonNegativeFloat,
    AutoOrPositiveInt,
    BucketSize,
    ContainerPath,
    FlagName,
    FlagOption,
    FlagValue,
    InterfaceName,
    NonNegativeFloat,
    Port,
    PositiveFloat,
    Seconds,
    ZeroStage,
    as_int,
)
from components.config.hosts import Mount

LLAMAFACTORY_DEFAULT_ARGS: dict[str, str | int | float | bool] = {
    "stage": "sft",
    "model_name_or_path": "/home/user/code/chatglm2-6b",
    "do_train": True,
    "dataset": "alpaca_gpt4_zh",
    "template": "chatglm2",
    "finetuning_type": "lora",
    "lora_target": "query_key_value",
    "overwrite_cache": True,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 4,
    "lr_scheduler_type": "cosine",
    "logging_steps": 10,
    "save_steps": 10000,
    # Each node keeps its own checkpoint shards (no shared storage), for a resume.
    "save_on_each_node": True,
    "learning_rate": 5e-5,
    "num_train_epochs": 0.25,
    "plot_loss": True,
    "fp16": True,
}
"""The write-up's LoRA SFT arguments (chatglm2-6b on alpaca_gpt4_zh), but its output_dir: each
run writes into its own directory under training.results_dir (components.render.results)."""

LLAMAFACTORY_ENTRYPOINT = "/opt/dslab/llamafactory_train.py"
"""The image's LLaMA-Factory entry point for the DeepSpeed launcher (assets/llamafactory_train.py)."""

LLAMAFACTORY_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    # LLaMA-Factory 0.9.4 refuses DeepSpeed > 0.16.9 unless told not to check; the image
    # pins 0.19.8, proven with it on CPU.
    "DISABLE_VERSION_CHECK": "1",
}
"""Environment of every LLaMA-Factory rank: models and datasets are local, no hub access."""

ArgValue = str | int | float | bool
"""A training argument's value, as the launch argv renders it."""


def _merge_llamafactory_args(value: Any) -> Any:
    # The configured args refine the write-up's; a null removes a default flag.
    if isinstance(value, Mapping):
        merged: dict[Any, Any] = {**LLAMAFACTORY_DEFAULT_ARGS, **value}
        return {key: item for key, item in merged.items() if item is not None}
    return value


class ScriptWorkload(FrozenModel):
    """Any training script: ``deepspeed ... <entrypoint> --deepspeed <ds_config> <args>``."""

    kind: Literal["script"] = "script"
    entrypoint: ContainerPath = Field(
        description="Script path inside the container, absolute or relative to workdir.",
        examples=["/opt/dslab/train_tiny.py"],
    )
    args: tuple[Argument, ...] = Field(
        default=(),
        description="Arguments after the ds_config flag.",
        examples=[["--steps", "20"]],
    )
    workdir: AbsolutePath = Field(
        default="/opt/dslab",
        description="Directory deepspeed runs in (and where .deepspeed_env lives). Default /opt/dslab.",
    )
    output_dir_flag: FlagOption | None = Field(
        default=None,
        description=(
            "Flag that passes the run's directory (on every host under training.results_dir, "
            "the same path in every container), e.g. --output_dir for /opt/dslab/train_tiny.py. "
            "Default none: the script is not told."
        ),
        examples=["--output_dir"],
    )
    deepspeed_config_flag: Literal["--deepspeed", "--deepspeed_config"] = Field(
        default="--deepspeed",
        description=(
            "Flag that passes the ds_config path: --deepspeed <path> (Hugging Face style, "
            "the default) or --deepspeed_config <path> (deepspeed.add_config_arguments)."
        ),
    )


class LlamaFactoryDataset(FrozenModel):
    """One dataset registered in the generated ``dataset_info.json`` (LLaMA-Factory's format)."""

    file_name: ContainerPath = Field(
        description="The data file or folder, relative to dataset_dir.target, or absolute in the container.",
        examples=["tiny_alpaca.json"],
    )
    formatting: Literal["alpaca", "sharegpt"] = Field(
        default="alpaca", description="Record format. Default alpaca."
    )
    columns: dict[FlagName, str] = Field(
        default_factory=dict,
        description=(
            "LLaMA-Factory's column mapping, e.g. {prompt: instruction, query: input, "
            "response: output}. Default: LLaMA-Factory's for the formatting."
        ),
        examples=[{"prompt": "instruction", "query": "input", "response": "output"}],
    )


def _fill_llamafactory_args(data: Any) -> Any:
    # The model and the registered datasets say what model_name_or_path and dataset are,
    # unless the args say it themselves.
    if not isinstance(data, Mapping):
        return data
    args = data.get("args", {})
    if not isinstance(args, Mapping):
        return data
    filled = dict(args)
    model = data.get("model")
    if isinstance(model, Mapping) and "target" in model:
        filled.setdefault("model_name_or_path", model["target"])
    datasets = data.get("datasets")
    if isinstance(datasets, Mapping) and datasets:
        filled.setdefault("dataset", ",".join(str(name) for name in datasets))
    return {**data, "args": filled}


class LlamaFactoryWorkload(FrozenModel):
    """LLaMA-Factory training, arguments passed as flags (the config-file form breaks
    under the DeepSpeed launcher, which prepends --local_rank: hiyouga/LLaMA-Factory#6075).

    The model and the datasets are host directories mounted into every container at the
    same path (never downloaded: the ranks run offline, see LLAMAFACTORY_ENV); the datasets
    are registered in a ``dataset_info.json`` generated from ``datasets`` and passed as
    ``--dataset_dir``.
    """

    kind: Literal["llamafactory"] = "llamafactory"
    entrypoint: ContainerPath = Field(
        default=LLAMAFACTORY_ENTRYPOINT,
        description=(
            "Training entry point, absolute or relative to workdir. Default "
            f"{LLAMAFACTORY_ENTRYPOINT} (the image's, with image.llamafactory); a checkout's "
            "src/train.py also works."
        ),
    )
    workdir: AbsolutePath = Field(
        default="/opt/dslab",
        description="Directory deepspeed runs in; relative paths in args start here. Default /opt/dslab.",
    )
    model: Mount | None = Field(
        default=None,
        description=(
            "The model directory on every host (source) and in every container (target); "
            "sets args.model_name_or_path to the target unless given. Checked on every "
            "host before the containers start."
        ),
        examples=[{"source": "/srv/models/chatglm2-6b", "target": "/models/chatglm2-6b", "read_only": True}],
    )
    dataset_dir: Mount | None = Field(
        default=None,
        description="The dataset directory on every host and in every container; checked like model.",
        examples=[{"source": "/srv/datasets", "target": "/datasets", "read_only": True}],
    )
    datasets: dict[FlagName, LlamaFactoryDataset] = Field(
        default_factory=dict,
        description=(
            "Datasets by name, rendered into dataset_info.json; args.dataset defaults to "
            "all of them. Default none (args.dataset_dir then says where dataset_info.json is)."
        ),
        examples=[{"tiny_alpaca": {"file_name": "tiny_alpaca.json"}}],
    )
    args: Annotated[
        dict[FlagName, FlagValue],
        BeforeValidator(_merge_llamafactory_args),
    ] = Field(
        default_factory=lambda: dict(LLAMAFACTORY_DEFAULT_ARGS),
        description=(
            "Training arguments, merged over the write-up's LoRA SFT defaults; null removes one."
        ),
        examples=[{"dataset": "alpaca_gpt4_zh"}],
    )

    @model_validator(mode="before")
    @classmethod
    def _args_follow_model_and_datasets(cls, data: Any) -> Any:
        return _fill_llamafactory_args(data)

    @model_validator(mode="after")
    def _datasets_are_registered_and_found(self) -> LlamaFactoryWorkload:
        problems = Problems()
        for name, dataset in self.datasets.items():
            if not dataset.file_name.startswith("/") and self.dataset_dir is None:
                problems.add(
                    ("datasets", name, "file_name"),
                    f"{dataset.file_name!r} is relative, but there is no dataset_dir to start "
                    "from; set dataset_dir: {source: /srv/datasets, target: /datasets}, or "
                    "give an absolute path in the container",
                )
        if "output_dir" in self.args:
            problems.add(
                ("args", "output_dir"),
                f"{self.args['output_dir']!r}: each run writes into its own directory under "
                "training.results_dir on every host, never into an earlier run's; remove it "
                "(set training.results_dir to choose where)",
            )
        if self.args.get("save_on_each_node") in (False, "false", "False"):
            problems.add(
                ("args", "save_on_each_node"),
                "false keeps the checkpoints and trainer_state.json on the first node only, but each "
                "host has its own disk (no shared storage): a resumed run's other ranks would find "
                "nothing to load; remove it (or set it true)",
            )
        if self.datasets:
            if "dataset_dir" in self.args:
                problems.add(
                    ("args", "dataset_dir"),
                    f"{self.args['dataset_dir']!r} would hide the dataset_info.json made from "
                    "datasets; remove it (or remove datasets and bring your own dataset_info.json)",
                )
            wanted = [name.strip() for name in str(self.args.get("dataset", "")).split(",") if name.strip()]
            for name in wanted:
                if name not in self.datasets:
                    problems.add(
                        ("args", "dataset"),
                        f"{name!r} is not one of datasets ({', '.join(self.datasets)}); "
                        f"register it under datasets, or use e.g. dataset: {next(iter(self.datasets))}",
                    )
        problems.raise_if_any()
        return self


Workload = Annotated[ScriptWorkload | LlamaFactoryWorkload, Field(discriminator="kind")]


class LossScaling(FrozenModel):
    """fp16 dynamic loss scaling (the write-up's values)."""

    loss_scale: float = Field(default=0, description="0 = dynamic. Default 0.")
    initial_scale_power: int = Field(
        default=16, description="Initial scale 2**n. Default 16."
    )
    loss_scale_window: int = Field(default=1000, description="Default 1000.")
    hysteresis: int = Field(default=2, description="Default 2.")
    min_loss_scale: float = Field(default=1, description="Default 1.")


class DeepSpeedSettings(FrozenModel):
    """What goes into ``ds_config.json``; defaults are the write-up's."""

    zero_stage: ZeroStage = Field(default=2, description="ZeRO stage 0..3. Default 2.")
    precision: Literal["auto", "fp16", "bf16", "fp32"] = Field(
        default="auto",
        description=(
            'Mixed precision. "auto" (default) lets the Hugging Face Trainer decide from its '
            'own fp16/bf16 arguments, like the write-up\'s fp16 "enabled": "auto".'
        ),
    )
    train_batch_size: AutoOrPositiveInt = Field(
        default="auto",
        description='Global batch = micro batch x accumulation x world size. Default "auto".',
    )
    train_micro_batch_size_per_gpu: AutoOrPositiveInt = Field(
        default="auto", description='Per-rank batch. Default "auto".'
    )
    gradient_accumulation_steps: AutoOrPositiveInt = Field(
        default="auto", description='Default "auto".'
    )
    gradient_clipping: AutoOrNonNegativeFloat = Field(
        default="auto",
        description='Gradient norm clip; 0 turns it off. Default "auto".',
    )
    zero_allow_untested_optimizer: bool = Field(
        default=True, description="Default true."
    )
    allgather_partitions: bool = Field(default=True, description="Default true.")
    allgather_bucket_size: BucketSize = Field(
        default=500_000_000, description="Elements per allgather bucket. Default 5e8."
    )
    reduce_scatter: bool = Field(default=True, description="Default true.")
    reduce_bucket_size: BucketSize = Field(
        default=500_000_000, description="Elements per reduce bucket. Default 5e8."
    )
    overlap_comm: bool = Field(default=False, description="Default false.")
    contiguous_gradients: bool = Field(default=True, description="Default true.")
    loss_scaling: LossScaling = Field(
        default_factory=LossScaling,
        description="fp16 loss scaling (fp16 and auto only).",
    )


class PreflightConfig(FrozenModel):
    """The cluster check before every run: ssh, hostfile, then a short all-reduce."""

    enabled: bool = Field(
        default=True, description="Run the preflight before training. Default true."
    )
    min_busbw_gbps: NonNegativeFloat = Field(
        default=0.0,
        description=(
            "Stop the launch when the all-reduce's bus bandwidth (Gbit/s, largest message) is "
            "below this. Default 0: report only."
        ),
        examples=[50.0],
    )
    sizes_mb: tuple[PositiveFloat, ...] = Field(
        default=(1.0, 16.0, 64.0),
        min_length=1,
        description=(
            "All-reduce message sizes in MiB; the last one gives the bandwidth. "
            "Default [1, 16, 64]."
        ),
    )
    reach_timeout: Seconds = Field(
        default=60, description="How long every node may take to answer ssh. Default 60."
    )
    run_timeout: Seconds = Field(
        default=300, description="How long the all-reduce may take; 0 no limit. Default 300."
    )


class TrainingConfig(FrozenModel):
    """The run: which workload, the DeepSpeed settings, and how ``pulumi up`` treats it."""

    launch: bool = Field(
        default=True, description="Start training on pulumi up. Default true."
    )
    wait: bool = Field(
        default=True,
        description="pulumi up waits for training to end (and fails with it). Default true.",
    )
    workload: Workload = Field(
        default_factory=LlamaFactoryWorkload,
        description="kind: script or kind: llamafactory. Default: the write-up's LLaMA-Factory run.",
    )
    deepspeed: DeepSpeedSettings = Field(default_factory=DeepSpeedSettings)
    master_port: Port = Field(
        default=29500, description="Rendezvous port. Default 29500."
    )
    stall_timeout: Seconds = Field(
        default=1800,
        description=(
            "Stop the run (and fail pulumi up in wait mode) when its log stays silent this "
            "many seconds; 0 never. A node pdsh loses stops it at once. Default 1800."
        ),
        examples=[600],
    )
    preflight: PreflightConfig = Field(default_factory=PreflightConfig)
    resume: Literal["auto", "never"] = Field(
        default="auto",
        description=(
            "auto: when the last run of this stack with the same identity (what changes its "
            "result) finished, it is reported, not trained again; when it did not finish and left "
            "a checkpoint, the next run goes on from the newest one every node holds whole, in its "
            "directory; never: every run starts over in a new directory. Default auto."
        ),
    )
    results_dir: AbsolutePath | None = Field(
        default=None,
        description=(
            "Where each run gets its own directory on every host (mounted into the containers): "
            "outputs, checkpoints, the adapter. Deleted only as results_on_destroy says. Default "
            "/var/lib/dslab/<project>/<stack>/runs."
        ),
        examples=["/srv/dslab/runs"],
    )
    results_on_destroy: Literal["keep", "remove"] = Field(
        default="keep",
        description=(
            "keep: pulumi destroy leaves every run's directory on the hosts; remove: destroy (or "
            "a host leaving the lab) removes the run directories this stack made under "
            "results_dir; another stack's runs and anything else there stay. Default keep."
        ),
    )
    socket_ifname: InterfaceName | None = Field(
        default=None,
        description=(
            "NCCL/GLOO socket interface. Default: detected in the container at run time as "
            "the interface holding the overlay subnet."
        ),
        examples=["eth0"],
    )

    @model_validator(mode="after")
    def _precision_and_batch_agree_with_workload(self) -> TrainingConfig:
        problems = Problems()
        workload = self.workload
        if isinstance(workload, LlamaFactoryWorkload):
            args = workload.args
            fp16, bf16 = is_true(args.get("fp16")), is_true(args.get("bf16"))
            precision = self.deepspeed.precision
            where = ("deepspeed", "precision")
            if fp16 and bf16:
                problems.add(
                    ("workload", "args"),
                    "sets both fp16: true and bf16: true; pick one, e.g. remove bf16",
                )
            elif precision == "fp16" and not fp16:
                problems.add(
                    where,
                    "'fp16' conflicts with training.workload.args "
                    f"({'bf16: true' if bf16 else 'no fp16: true'}); set args.fp16: true, "
                    "or precision: auto to follow the args",
                )
            elif precision == "bf16" and not bf16:
                problems.add(
                    where,
                    "'bf16' conflicts with training.workload.args "
                    f"({'fp16: true' if fp16 else 'no bf16: true'}); set args.bf16: true "
                    "(and fp16: null), or precision: auto to follow the args",
                )
            elif precision == "fp32" and (fp16 or bf16):
                flag = "fp16" if fp16 else "bf16"
                problems.add(
                    where,
                    f"'fp32' conflicts with training.workload.args.{flag}: true; set "
                    f"args.{flag}: null, or precision: auto to follow the args",
                )
            # The Trainer refuses a ds_config whose numbers differ from its own arguments.
            for ds_key, arg_key in (
                ("train_micro_batch_size_per_gpu", "per_device_train_batch_size"),
                ("gradient_accumulation_steps", "gradient_accumulation_steps"),
            ):
                ds_value = getattr(self.deepspeed, ds_key)
                arg_value = as_int(args.get(arg_key))
                if (
                    ds_value != "auto"
                    and arg_value is not None
                    and ds_value != arg_value
                ):
                    problems.add(
                        ("deepspeed", ds_key),
                        f"{ds_value} differs from training.workload."
                        f"args.{arg_key} ({arg_value}); the Trainer rejects the mismatch: set "
                        f'{ds_key}: "auto" or make them equal',
                    )
        problems.raise_if_any()
        return self

    def effective_batch_numbers(self) -> tuple[int | None, int | None, int | None]:
        """(global batch, micro batch, accumulation steps) where known: ds_config numbers,
        else the LLaMA-Factory arguments that fill its "auto" values."""

        def known(value: int | str) -> int | None:
            return value if isinstance(value, int) else None

        ds = self.deepspeed
        micro, accumulation = (
            known(ds.train_micro_batch_size_per_gpu),
            known(ds.gradient_accumulation_steps),
        )
        if isinstance(self.workload, LlamaFactoryWorkload):
            args = self.workload.args
            micro = micro or as_int(args.get("per_device_train_batch_size"))
            # The Trainer's default accumulation is 1.
            accumulation = accumulation or as_int(
                args.get("gradient_accumulation_steps", 1)
            )
        return known(ds.train_batch_size), micro, accumulation
