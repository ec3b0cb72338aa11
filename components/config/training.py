"""`dslab:training`: the workload (a script or LLaMA-Factory), DeepSpeed's settings, the preflight."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, model_validator

from components.config.base import FrozenModel, Problems, is_true
from components.config.fields import (
    FLAG_NAME_PATTERN,
    FLAG_VALUE_SCHEMA,
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
from components.config.on_change import Effect, on_change
from components.config.shapes import JsonSchema, Shape

# What the run is (docs/runs.md, What starts a new run): the command line, ds_config.json, dataset_info.json.
_NEW_RUN = on_change(Effect.NEW_RUN)
_LOSS_SCALING = on_change(Effect.NEW_RUN, "with precision fp16 or auto; the others have no loss scaling")
_WATCHED = on_change(Effect.REPORTS_ONLY, "how the run going is watched")
_PREFLIGHT = on_change(Effect.REPORTS_ONLY, "the next run's preflight")
_INPUT_MOUNT = on_change(
    Effect.NEW_CONTAINERS, "every container mounts it; a new run (the arguments name it, its files are inputs)"
)

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


_TRUE = {"anyOf": [{"const": True}, {"type": "string", "pattern": r"^\s*[tT][rR][uU][eE]\s*$"}]}
"""A flag value that means true (base.is_true)."""

LLAMAFACTORY_ARGS_SCHEMA: JsonSchema = {
    "type": "object",
    "propertyNames": {"type": "string", "pattern": FLAG_NAME_PATTERN},
    # null removes one of the write-up's defaults (_merge_llamafactory_args).
    "additionalProperties": {"anyOf": [FLAG_VALUE_SCHEMA, {"type": "null"}]},
    # The rules of LlamaFactoryWorkload's validator that look at the arguments alone.
    "properties": {
        "output_dir": {"type": "null"},
        "save_on_each_node": {"not": {"enum": [False, "false", "False"]}},
    },
    # fp16 is on by default: bf16 asks for fp16: null (or false).
    "if": {"required": ["bf16"], "properties": {"bf16": _TRUE}},
    "then": {"required": ["fp16"], "properties": {"fp16": {"not": _TRUE}}},
}


def _kind_is_required(schema: JsonSchema) -> None:
    # The union picks the workload by `kind`: the loader refuses a workload without one.
    schema["required"] = [*schema.get("required", []), "kind"]


def _merge_llamafactory_args(value: Any) -> Any:
    # The configured args refine the write-up's; a null removes a default flag.
    if isinstance(value, Mapping):
        merged: dict[Any, Any] = {**LLAMAFACTORY_DEFAULT_ARGS, **value}
        return {key: item for key, item in merged.items() if item is not None}
    return value


class ScriptWorkload(FrozenModel):
    """Any training script: ``deepspeed ... <entrypoint> --deepspeed <ds_config> <args>``."""

    model_config = ConfigDict(json_schema_extra=_kind_is_required)

    kind: Literal["script"] = Field(
        default="script",
        description="Which workload: script (any DeepSpeed script) or llamafactory.",
        examples=["script"],
        json_schema_extra=_NEW_RUN,
    )
    entrypoint: ContainerPath = Field(
        description="Script path inside the container, absolute or relative to workdir.",
        examples=["/opt/dslab/train_tiny.py"],
        json_schema_extra=_NEW_RUN,
    )
    args: tuple[Argument, ...] = Field(
        default=(),
        description="Arguments after the ds_config flag.",
        examples=[["--steps", "20"]],
        json_schema_extra=_NEW_RUN,
    )
    workdir: AbsolutePath = Field(
        default="/opt/dslab",
        description="Directory deepspeed runs in (and where .deepspeed_env lives). Default /opt/dslab.",
        examples=["/home/user/code"],
        json_schema_extra=on_change(
            Effect.REPORTS_ONLY, "the next run starts there; it is not part of what the run is"
        ),
    )
    output_dir_flag: FlagOption | None = Field(
        default=None,
        description=(
            "Flag that passes the run's directory (on every host under training.results_dir, "
            "the same path in every container), e.g. --output_dir for /opt/dslab/train_tiny.py. "
            "Default none: the script is not told."
        ),
        examples=["--output_dir"],
        json_schema_extra=_NEW_RUN,
    )
    deepspeed_config_flag: Literal["--deepspeed", "--deepspeed_config"] = Field(
        default="--deepspeed",
        description=(
            "Flag that passes the ds_config path: --deepspeed <path> (Hugging Face style, "
            "the default) or --deepspeed_config <path> (deepspeed.add_config_arguments)."
        ),
        examples=["--deepspeed_config"],
        json_schema_extra=_NEW_RUN,
    )


class LlamaFactoryDataset(FrozenModel):
    """One dataset registered in the generated ``dataset_info.json`` (LLaMA-Factory's format)."""

    file_name: ContainerPath = Field(
        description="The data file or folder, relative to dataset_dir.target, or absolute in the container.",
        examples=["tiny_alpaca.json"],
        json_schema_extra=_NEW_RUN,
    )
    formatting: Literal["alpaca", "sharegpt"] = Field(
        default="alpaca",
        description="Record format. Default alpaca.",
        examples=["sharegpt"],
        json_schema_extra=_NEW_RUN,
    )
    columns: dict[FlagName, str] = Field(
        default_factory=dict,
        description=(
            "LLaMA-Factory's column mapping, e.g. {prompt: instruction, query: input, "
            "response: output}. Default: LLaMA-Factory's for the formatting."
        ),
        examples=[{"prompt": "instruction", "query": "input", "response": "output"}],
        json_schema_extra=_NEW_RUN,
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

    model_config = ConfigDict(json_schema_extra=_kind_is_required)

    kind: Literal["llamafactory"] = Field(
        default="llamafactory",
        description="Which workload: llamafactory (LLaMA-Factory's trainer) or script.",
        examples=["llamafactory"],
        json_schema_extra=_NEW_RUN,
    )
    entrypoint: ContainerPath = Field(
        default=LLAMAFACTORY_ENTRYPOINT,
        description=(
            "Training entry point, absolute or relative to workdir. Default "
            f"{LLAMAFACTORY_ENTRYPOINT} (the image's, with image.llamafactory); a checkout's "
            "src/train.py also works."
        ),
        examples=["/opt/LLaMA-Factory/src/train.py"],
        json_schema_extra=_NEW_RUN,
    )
    workdir: AbsolutePath = Field(
        default="/opt/dslab",
        description="Directory deepspeed runs in; relative paths in args start here. Default /opt/dslab.",
        examples=["/opt/LLaMA-Factory"],
        json_schema_extra=on_change(
            Effect.REPORTS_ONLY, "the next run starts there; it is not part of what the run is"
        ),
    )
    model: Mount | None = Field(
        default=None,
        description=(
            "The model directory on every host (source) and in every container (target); "
            "sets args.model_name_or_path to the target unless given. Checked on every "
            "host before the containers start."
        ),
        examples=[{"source": "/srv/models/chatglm2-6b", "target": "/models/chatglm2-6b", "read_only": True}],
        json_schema_extra=_INPUT_MOUNT,
    )
    dataset_dir: Mount | None = Field(
        default=None,
        description="The dataset directory on every host and in every container; checked like model.",
        examples=[{"source": "/srv/datasets", "target": "/datasets", "read_only": True}],
        json_schema_extra=_INPUT_MOUNT,
    )
    datasets: dict[FlagName, LlamaFactoryDataset] = Field(
        default_factory=dict,
        description=(
            "Datasets by name, rendered into dataset_info.json; args.dataset defaults to "
            "all of them. Default none (args.dataset_dir then says where dataset_info.json is)."
        ),
        examples=[{"tiny_alpaca": {"file_name": "tiny_alpaca.json"}}],
        json_schema_extra=_NEW_RUN,
    )
    args: Annotated[
        dict[FlagName, FlagValue],
        BeforeValidator(_merge_llamafactory_args),
        Shape("mapping of argument name to string, number, boolean or null", LLAMAFACTORY_ARGS_SCHEMA, replace=True),
    ] = Field(
        default_factory=lambda: dict(LLAMAFACTORY_DEFAULT_ARGS),
        description=("Training arguments, merged over the write-up's LoRA SFT defaults; null removes one."),
        examples=[{"dataset": "alpaca_gpt4_zh"}],
        json_schema_extra=_NEW_RUN,
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

    loss_scale: float = Field(
        default=0,
        description="Static loss scale; 0 = dynamic. Default 0.",
        examples=[128],
        json_schema_extra=_LOSS_SCALING,
    )
    initial_scale_power: int = Field(
        default=16,
        description="Dynamic scaling starts at 2**n. Default 16.",
        examples=[12],
        json_schema_extra=_LOSS_SCALING,
    )
    loss_scale_window: int = Field(
        default=1000,
        description="Steps without overflow before the scale grows. Default 1000.",
        examples=[500],
        json_schema_extra=_LOSS_SCALING,
    )
    hysteresis: int = Field(
        default=2,
        description="Overflows tolerated before the scale shrinks. Default 2.",
        examples=[1],
        json_schema_extra=_LOSS_SCALING,
    )
    min_loss_scale: float = Field(
        default=1,
        description="The scale never drops below this. Default 1.",
        examples=[0.5],
        json_schema_extra=_LOSS_SCALING,
    )


class DeepSpeedSettings(FrozenModel):
    """What goes into ``ds_config.json``; defaults are the write-up's."""

    zero_stage: ZeroStage = Field(
        default=2, description="ZeRO stage 0..3. Default 2.", examples=[3], json_schema_extra=_NEW_RUN
    )
    precision: Literal["auto", "fp16", "bf16", "fp32"] = Field(
        default="auto",
        description=(
            'Mixed precision. "auto" (default) lets the Hugging Face Trainer decide from its '
            'own fp16/bf16 arguments, like the write-up\'s fp16 "enabled": "auto".'
        ),
        examples=["bf16"],
        json_schema_extra=_NEW_RUN,
    )
    train_batch_size: AutoOrPositiveInt = Field(
        default="auto",
        description='Global batch = micro batch x accumulation x world size. Default "auto".',
        examples=[32],
        json_schema_extra=_NEW_RUN,
    )
    train_micro_batch_size_per_gpu: AutoOrPositiveInt = Field(
        default="auto", description='Per-rank batch. Default "auto".', examples=[4], json_schema_extra=_NEW_RUN
    )
    gradient_accumulation_steps: AutoOrPositiveInt = Field(
        default="auto",
        description='Micro batches summed before each optimizer step. Default "auto".',
        examples=[4],
        json_schema_extra=_NEW_RUN,
    )
    gradient_clipping: AutoOrNonNegativeFloat = Field(
        default="auto",
        description='Gradient norm clip; 0 turns it off. Default "auto".',
        examples=[1.0],
        json_schema_extra=_NEW_RUN,
    )
    zero_allow_untested_optimizer: bool = Field(
        default=True,
        description="Let ZeRO run with an optimizer DeepSpeed has not tested with it. Default true.",
        examples=[False],
        json_schema_extra=_NEW_RUN,
    )
    allgather_partitions: bool = Field(
        default=True,
        description="Gather the updated parameters with one all-gather, not a series of broadcasts. Default true.",
        examples=[False],
        json_schema_extra=_NEW_RUN,
    )
    allgather_bucket_size: BucketSize = Field(
        default=500_000_000,
        description="Elements per allgather bucket. Default 5e8.",
        examples=["2e8"],
        json_schema_extra=_NEW_RUN,
    )
    reduce_scatter: bool = Field(
        default=True,
        description="Average gradients with reduce-scatter, not all-reduce. Default true.",
        examples=[False],
        json_schema_extra=_NEW_RUN,
    )
    reduce_bucket_size: BucketSize = Field(
        default=500_000_000,
        description="Elements per reduce bucket. Default 5e8.",
        examples=["2e8"],
        json_schema_extra=_NEW_RUN,
    )
    overlap_comm: bool = Field(
        default=False,
        description="Overlap the gradient reduction with the backward pass. Default false.",
        examples=[True],
        json_schema_extra=_NEW_RUN,
    )
    contiguous_gradients: bool = Field(
        default=True,
        description="Copy gradients into one contiguous buffer as they are made. Default true.",
        examples=[False],
        json_schema_extra=_NEW_RUN,
    )
    loss_scaling: LossScaling = Field(
        default_factory=LossScaling,
        description="fp16 loss scaling (fp16 and auto only).",
        examples=[{"initial_scale_power": 12}],
        json_schema_extra=_LOSS_SCALING,
    )


class PreflightConfig(FrozenModel):
    """The cluster check before every run: ssh, hostfile, then a short all-reduce."""

    enabled: bool = Field(
        default=True,
        description="Run the preflight before training. Default true.",
        examples=[False],
        json_schema_extra=_PREFLIGHT,
    )
    min_busbw_gbps: NonNegativeFloat = Field(
        default=0.0,
        description=(
            "Stop the launch when the all-reduce's bus bandwidth (Gbit/s, largest message) is "
            "below this. Default 0: report only."
        ),
        examples=[50.0],
        json_schema_extra=_PREFLIGHT,
    )
    sizes_mb: tuple[PositiveFloat, ...] = Field(
        default=(1.0, 16.0, 64.0),
        min_length=1,
        description=("All-reduce message sizes in MiB; the last one gives the bandwidth. Default [1, 16, 64]."),
        examples=[[1, 256]],
        json_schema_extra=_PREFLIGHT,
    )
    reach_timeout: Seconds = Field(
        default=60,
        description="How long every node may take to answer ssh. Default 60.",
        examples=[120],
        json_schema_extra=on_change(
            Effect.REPORTS_ONLY, "the next run's preflight; the manager's reach check runs again in place"
        ),
    )
    run_timeout: Seconds = Field(
        default=300,
        description="How long the all-reduce may take; 0 no limit. Default 300.",
        examples=[600],
        json_schema_extra=_PREFLIGHT,
    )


class TrainingConfig(FrozenModel):
    """The run: which workload, the DeepSpeed settings, and how ``pulumi up`` treats it."""

    launch: bool = Field(
        default=True,
        description="Start training on pulumi up. Default true.",
        examples=[False],
        json_schema_extra=on_change(Effect.NEW_RUN, "false stops the run going (its step is removed); true starts one"),
    )
    wait: bool = Field(
        default=True,
        description="pulumi up waits for training to end (and fails with it). Default true.",
        examples=[False],
        json_schema_extra=on_change(Effect.REPORTS_ONLY, "true follows the run going to its end"),
    )
    workload: Workload = Field(
        default_factory=LlamaFactoryWorkload,
        description="kind: script or kind: llamafactory. Default: the write-up's LLaMA-Factory run.",
        examples=[{"kind": "script", "entrypoint": "/opt/dslab/train_tiny.py", "args": ["--steps", "20"]}],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "the most one of its keys does: a mount of model or dataset_dir; most make a new run",
            default="kind: llamafactory with the write-up's arguments",
        ),
    )
    deepspeed: DeepSpeedSettings = Field(
        default_factory=DeepSpeedSettings,
        description="What goes into ds_config.json; the defaults are the write-up's.",
        examples=[{"zero_stage": 3, "precision": "bf16"}],
        json_schema_extra=_NEW_RUN,
    )
    master_port: Port = Field(
        default=29500,
        description="Rendezvous port. Default 29500.",
        examples=[29600],
        json_schema_extra=on_change(Effect.REPORTS_ONLY, "the next run's; not part of what the run is"),
    )
    stall_timeout: Seconds = Field(
        default=1800,
        description=(
            "Stop the run (and fail pulumi up in wait mode) when its log stays silent this "
            "many seconds; 0 never. A node pdsh loses stops it at once. Default 1800."
        ),
        examples=[600],
        json_schema_extra=_WATCHED,
    )
    preflight: PreflightConfig = Field(
        default_factory=PreflightConfig,
        description="The check right before each new run: every node answers ssh, then a short all-reduce.",
        examples=[{"min_busbw_gbps": 50.0}],
        json_schema_extra=_PREFLIGHT,
    )
    resume: Literal["auto", "never"] = Field(
        default="auto",
        description=(
            "auto: when the last run of this stack with the same identity (what changes its "
            "result) finished, it is reported, not trained again; when it did not finish and left "
            "a checkpoint, the next run goes on from the newest one every node holds whole, in its "
            "directory; never: every run starts over in a new directory. Default auto."
        ),
        examples=["never"],
        json_schema_extra=on_change(Effect.REPORTS_ONLY, "read when a new run starts"),
    )
    results_dir: AbsolutePath | None = Field(
        default=None,
        description=(
            "Where each run gets its own directory on every host (mounted into the containers): "
            "outputs, checkpoints, the adapter. Deleted only as results_on_destroy says. Default "
            "/var/lib/dslab/<project>/<stack>/runs."
        ),
        examples=["/srv/dslab/runs"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "every container mounts it: it waits for the run going, whose containers keep the old "
            "directory until it ended; the up after that moves them",
            default="/var/lib/dslab/<project>/<stack>/runs",
        ),
    )
    results_on_destroy: Literal["keep", "remove"] = Field(
        default="keep",
        description=(
            "keep: pulumi destroy leaves every run's directory on the hosts; remove: destroy (or "
            "a host leaving the lab) removes the run directories this stack made under "
            "results_dir; another stack's runs and anything else there stay. Default keep."
        ),
        examples=["remove"],
        json_schema_extra=on_change(
            Effect.NOTHING, "read from the stack file when the stack is destroyed or a host leaves"
        ),
    )
    socket_ifname: InterfaceName | None = Field(
        default=None,
        description=(
            "NCCL/GLOO socket interface. Default: detected in the container at run time as "
            "the interface holding the overlay subnet."
        ),
        examples=["eth0"],
        json_schema_extra=on_change(
            Effect.NOTHING,
            "the next run's .deepspeed_env, placed again in the manager's container",
            default="detected: the container's interface on the overlay subnet",
        ),
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
                if ds_value != "auto" and arg_value is not None and ds_value != arg_value:
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
            accumulation = accumulation or as_int(args.get("gradient_accumulation_steps", 1))
        return known(ds.train_batch_size), micro, accumulation
