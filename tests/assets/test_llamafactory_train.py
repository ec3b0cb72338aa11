"""llamafactory_train.py, the image's LLaMA-Factory entry point, without torch (stand-ins for
DeepSpeed, LLaMA-Factory and transformers): what it sets up before LLaMA-Factory runs, and
the Trainer's optimizer losing its empty parameter groups before a learning-rate scheduler is
built on it.

On the GPU check's torch 2.11 (docs/gpu.md) a LoRA run with ZeRO-2 otherwise failed at its
first step: "ValueError: zip() argument 2 is longer than argument 1" (2 scheduler rates
against the 1 group DeepSpeed kept).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from tests.support.asset_module import load_asset



@pytest.fixture(scope="module")
def entry_point() -> ModuleType:
    return load_asset("llamafactory_train.py")


class FakeOptimizer:
    def __init__(self, groups: list[dict[str, Any]]) -> None:
        self.param_groups = groups


class FakeTrainer:
    """What the Trainer does for a LoRA model: "decay" holds every adapter weight, "no decay" nothing."""

    def __init__(self) -> None:
        self.optimizer: FakeOptimizer | None = None

    def create_optimizer(self) -> FakeOptimizer:
        if self.optimizer is None:
            self.optimizer = FakeOptimizer([{"params": ["lora_A", "lora_B"], "weight_decay": 0.1},
                                            {"params": [], "weight_decay": 0.0}])  # fmt: skip
        return self.optimizer


def test_it_imports_without_torch(entry_point: ModuleType) -> None:
    assert "torch" not in sys.modules and callable(entry_point.main)


def test_the_trainers_optimizer_has_no_empty_parameter_group(entry_point: ModuleType) -> None:
    class Trainer(FakeTrainer):
        pass

    class LlamaFactoryTrainer(Trainer):  # LLaMA-Factory's trainers call super().create_optimizer()
        def create_optimizer(self) -> FakeOptimizer:
            return super().create_optimizer()

    entry_point.drop_empty_param_groups(Trainer)
    trainer = LlamaFactoryTrainer()
    optimizer = trainer.create_optimizer()

    assert optimizer.param_groups == [{"params": ["lora_A", "lora_B"], "weight_decay": 0.1}]
    assert trainer.optimizer is optimizer, "the same optimizer, changed in place, as the Trainer holds it"


def test_groups_that_hold_parameters_are_kept_in_order(entry_point: ModuleType) -> None:
    groups = [{"params": ["w"]}, {"params": []}, {"params": ["b"]}]
    optimizer = entry_point.without_empty_param_groups(FakeOptimizer(groups))
    assert optimizer.param_groups == [{"params": ["w"]}, {"params": ["b"]}]


def test_main_sets_up_deepspeed_then_hands_over_to_llamafactory(
    entry_point: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, Any]] = []

    class Trainer(FakeTrainer):
        pass

    stand_ins = {
        "deepspeed": SimpleNamespace(init_distributed=lambda dist_backend: calls.append(("init", dist_backend))),
        "deepspeed.accelerator": SimpleNamespace(
            get_accelerator=lambda: SimpleNamespace(communication_backend_name=lambda: "nccl")
        ),
        "deepspeed.utils": SimpleNamespace(set_log_level_from_string=lambda level: calls.append(("log", level))),
        "llamafactory.train.tuner": SimpleNamespace(run_exp=lambda: calls.append(("run", Trainer().create_optimizer()))),
        "transformers": SimpleNamespace(Trainer=Trainer),
    }
    for name, module in stand_ins.items():
        monkeypatch.setitem(sys.modules, name, module)

    entry_point.main()

    assert [call[0] for call in calls] == ["log", "init", "run"]
    assert calls[0][1] == "info", "DeepSpeed's engine configuration (fp16, ZeRO stage) reaches the log"
    assert calls[1][1] == "nccl", "the accelerator's own backend, not accelerate's choice"
    assert len(calls[2][1].param_groups) == 1, "the Trainer's optimizer has lost its empty group"


def test_the_output_directory_comes_from_the_command_line(entry_point: ModuleType) -> None:
    argv = ["llamafactory_train.py", "--local_rank=1", "--output_dir", "/opt/dslab/results/r1", "--stage", "sft"]
    assert entry_point.flag_value(argv, "--output_dir") == "/opt/dslab/results/r1"
    assert entry_point.flag_value(["llamafactory_train.py", "--stage", "sft"], "--output_dir") is None


@pytest.mark.parametrize(
    ("extra", "resumes"),
    [([], True), (["--overwrite_output_dir", "false"], True), (["--overwrite_output_dir", "true"], False),
     (["--overwrite_output_dir"], False), (["--resume_from_checkpoint", "/opt/dslab/results/r0/checkpoint-50"], False)],
)  # fmt: skip
def test_the_trainer_looks_for_a_checkpoint_unless_told_where_or_to_overwrite(
    entry_point: ModuleType, extra: list[str], resumes: bool
) -> None:
    argv = ["llamafactory_train.py", "--output_dir", "/opt/dslab/results/r1", *extra, "--stage", "sft"]
    assert entry_point.trainer_resumes(argv) is resumes


def test_the_zero_stage_comes_from_the_ds_config(entry_point: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "ds_config.json").write_text('{"zero_optimization": {"stage": 2}, "train_batch_size": "auto"}')
    (tmp_path / "plain.json").write_text('{"train_batch_size": "auto"}')
    assert entry_point.zero_stage_of(str(tmp_path / "ds_config.json")) == 2
    assert entry_point.zero_stage_of(str(tmp_path / "plain.json")) == 0
    assert entry_point.zero_stage_of(None) == 0


def saved_checkpoint(output_dir: Path, step: int, ranks: list[int]) -> None:
    """What a node holds of the Trainer's checkpoint of STEP with ZeRO 2: the model states and its ranks' shards."""
    tag = output_dir / f"checkpoint-{step}" / f"global_step{step}"
    tag.mkdir(parents=True)
    (tag / "mp_rank_00_model_states.pt").write_bytes(b"model")
    for rank in ranks:
        (tag / f"bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt").write_bytes(b"shard")


def test_a_rank_finds_its_nodes_checkpoints_and_what_it_can_load_of_each(entry_point: ModuleType, tmp_path: Path) -> None:
    saved_checkpoint(tmp_path, 50, [2, 3])
    entry_point.mark_complete(str(tmp_path / "checkpoint-50"))
    saved_checkpoint(tmp_path, 100, [2])  # cut while rank 3 wrote its part: never marked
    (tmp_path / "checkpoint-150.tmp").mkdir()  # not a name the Trainer resumes from
    held = entry_point.held_checkpoints(str(tmp_path))
    assert held == {50: str(tmp_path / "checkpoint-50"), 100: str(tmp_path / "checkpoint-100")}
    tags = {step: f"{folder}/global_step{step}" for step, folder in held.items()}
    assert entry_point.loadable(held, tags, 2, 3) == {50: None, 100: "its save did not end (no completion mark)"}
    assert entry_point.held_checkpoints(str(tmp_path / "not-made-yet")) == {}, "a new run"


def test_each_checkpoint_on_this_node_names_its_deepspeed_tag(entry_point: ModuleType, tmp_path: Path) -> None:
    # What a worker holds after a save: its shards, but no `latest` (DeepSpeed writes it on rank 0's node).
    (tmp_path / "checkpoint-50/global_step50").mkdir(parents=True)
    (tmp_path / "checkpoint-100/global_step100").mkdir(parents=True)
    (tmp_path / "checkpoint-100/latest").write_text("global_step100")  # the first rank's node
    (tmp_path / "checkpoint-150").mkdir()  # no DeepSpeed shards: nothing to name
    named = entry_point.name_latest_checkpoints(str(tmp_path))
    assert named == [str(tmp_path / "checkpoint-50")]
    assert (tmp_path / "checkpoint-50/latest").read_text() == "global_step50"
    assert not (tmp_path / "checkpoint-150/latest").exists()
    assert entry_point.name_latest_checkpoints(str(tmp_path)) == [], "once"
