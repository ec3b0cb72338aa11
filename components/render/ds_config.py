"""``ds_config.json``: the DeepSpeed configuration, from :class:`DeepSpeedSettings`.

With the defaults this is the write-up's file, plus ``"bf16": {"enabled": "auto"}`` so
that a Hugging Face Trainer run with ``bf16: true`` really runs in bf16 ("auto" values are
filled by the Trainer integration; plain ``deepspeed.initialize`` needs numbers), and
node-local checkpoints (each host keeps its own shards: no shared storage is assumed).
"""

from __future__ import annotations

import json
from typing import Any

from components.config import DeepSpeedSettings


def _number(value: float) -> int | float:
    """Whole numbers as ints, so the JSON reads 0 and 1, not 0.0 and 1.0."""
    return int(value) if float(value).is_integer() else value


def _precision_sections(settings: DeepSpeedSettings) -> dict[str, Any]:
    scaling = settings.loss_scaling
    fp16_scaling = {
        "loss_scale": _number(scaling.loss_scale),
        "initial_scale_power": scaling.initial_scale_power,
        "loss_scale_window": scaling.loss_scale_window,
        "hysteresis": scaling.hysteresis,
        "min_loss_scale": _number(scaling.min_loss_scale),
    }
    if settings.precision == "auto":
        return {
            "fp16": {"enabled": "auto", **fp16_scaling},
            "bf16": {"enabled": "auto"},
        }
    if settings.precision == "fp16":
        return {"fp16": {"enabled": True, **fp16_scaling}}
    if settings.precision == "bf16":
        return {"bf16": {"enabled": True}}
    return {}  # fp32: no mixed-precision section at all


def build_ds_config(settings: DeepSpeedSettings) -> dict[str, Any]:
    """The ds_config as a dict, keys in the write-up's order."""
    clipping = settings.gradient_clipping
    return {
        "train_batch_size": settings.train_batch_size,
        "train_micro_batch_size_per_gpu": settings.train_micro_batch_size_per_gpu,
        "gradient_accumulation_steps": settings.gradient_accumulation_steps,
        "gradient_clipping": clipping if clipping == "auto" else _number(clipping),
        "zero_allow_untested_optimizer": settings.zero_allow_untested_optimizer,
        **_precision_sections(settings),
        "zero_optimization": {
            "stage": settings.zero_stage,
            "allgather_partitions": settings.allgather_partitions,
            "allgather_bucket_size": settings.allgather_bucket_size,
            "reduce_scatter": settings.reduce_scatter,
            "reduce_bucket_size": settings.reduce_bucket_size,
            "overlap_comm": settings.overlap_comm,
            "contiguous_gradients": settings.contiguous_gradients,
        },
        # No storage is shared between the hosts: every node keeps its own ranks' shards (and
        # its own copy of the model states) in the run's directory on its disk, for a resume.
        "checkpoint": {"use_node_local_storage": True},
    }


def render_ds_config(settings: DeepSpeedSettings) -> str:
    """``ds_config.json`` text: two-space indented JSON with a final newline."""
    return json.dumps(build_ds_config(settings), indent=2) + "\n"
