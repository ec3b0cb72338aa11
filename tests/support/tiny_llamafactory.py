"""The tiny LLaMA-Factory run the tests share: LoRA SFT with ZeRO-2 on CPU, 2 ranks, on the
tiny Llama and alpaca set that assets/make_tiny_llama.py makes under INPUTS on every host."""

from __future__ import annotations

from typing import Any

INPUTS = "/srv/dslab"
MODEL = f"{INPUTS}/models/tiny-llama"
DATASETS = f"{INPUTS}/datasets"

TINY_LORA_SFT: dict[str, Any] = {
    "kind": "llamafactory",
    "model": {"source": MODEL, "target": "/models/tiny-llama", "read_only": True},
    "dataset_dir": {"source": DATASETS, "target": "/datasets", "read_only": True},
    "datasets": {"tiny_alpaca": {"file_name": "tiny_alpaca.json"}},
    "args": {
        "template": "default",
        "lora_target": "all",
        "cutoff_len": 128,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "learning_rate": 0.001,
        "max_steps": 10,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        # The write-up's GPU settings that do not apply on CPU.
        "fp16": None,
        "num_train_epochs": None,
        "save_steps": None,
    },
}
