"""train_tiny.py's command line, which must import without torch or DeepSpeed."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.asset_module import load_asset



@pytest.fixture(scope="module")
def train_tiny() -> ModuleType:
    return load_asset("train_tiny.py")


def test_it_imports_and_parses_without_torch(train_tiny: ModuleType) -> None:
    # The operator's venv has no torch: torch and deepspeed are imported inside train().
    assert "torch" not in sys.modules
    assert train_tiny.parse_args(["--deepspeed", "ds.json"]).config == "ds.json"


def test_the_launchers_local_rank_flag_is_accepted_in_both_forms(
    train_tiny: ModuleType,
) -> None:
    assert train_tiny.parse_args(["--deepspeed", "c", "--local_rank=1"]).local_rank == 1
    assert train_tiny.parse_args(["--deepspeed", "c", "--local-rank", "2"]).local_rank == 2


def test_local_rank_defaults_to_the_environment(train_tiny: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert train_tiny.parse_args(["--deepspeed", "c"]).local_rank == 3


def test_both_ds_config_flag_spellings_of_the_workload_config_work(
    train_tiny: ModuleType,
) -> None:
    # training.workload.deepspeed_config_flag may be --deepspeed or --deepspeed_config.
    assert train_tiny.parse_args(["--deepspeed_config", "x.json"]).config == "x.json"


def test_defaults_are_twenty_steps_and_no_injected_failure(
    train_tiny: ModuleType,
) -> None:
    args = train_tiny.parse_args(["--deepspeed", "c"])
    assert (args.steps, args.fail_rank, args.timeout_s) == (20, None, 300)


@pytest.mark.parametrize(
    "argv",
    [[], ["--deepspeed", "c", "--steps", "0"], ["--deepspeed", "c", "--steps", "x"]],
    ids=["no config", "zero steps", "steps not a number"],
)
def test_bad_arguments_exit_2(train_tiny: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        train_tiny.parse_args(argv)
    assert exc.value.code == 2


def test_the_checkpoints_are_the_step_folders_deepspeed_saved(train_tiny: ModuleType, tmp_path: Path) -> None:
    assert train_tiny.held_steps(str(tmp_path / "checkpoints")) == {}, "no checkpoint yet"
    for name in ("step50", "step150", "global_step7"):
        (tmp_path / "checkpoints" / name).mkdir(parents=True)
    (tmp_path / "checkpoints/latest").write_text("step150")
    assert train_tiny.held_steps(str(tmp_path / "checkpoints")) == {
        50: str(tmp_path / "checkpoints/step50"), 150: str(tmp_path / "checkpoints/step150"),
    }, "ours only; DeepSpeed's `latest` is no proof of anything"  # fmt: skip


def test_checkpoints_are_kept_every_save_steps(train_tiny: ModuleType) -> None:
    assert train_tiny.parse_args(["--deepspeed", "c"]).save_steps == 50
    assert train_tiny.parse_args(["--deepspeed", "c", "--save_steps", "7"]).save_steps == 7
