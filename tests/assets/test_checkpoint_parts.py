"""assets/checkpoint_parts.py: which files a rank needs of a DeepSpeed checkpoint per ZeRO stage,
when a checkpoint counts (marked complete, its files of their sizes), and which one a resumed run
goes on from on every node (both workloads' choice)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.support.asset_module import load_asset


@pytest.fixture(scope="module")
def parts() -> ModuleType:
    return load_asset("checkpoint_parts.py")


def tag_folder(tmp_path: Path, *names: str) -> str:
    for name in names:
        (tmp_path / name).write_bytes(b"saved")
    return str(tmp_path)


@pytest.mark.parametrize(
    ("zero_stage", "files", "present"),
    [
        (0, ["mp_rank_00_model_states.pt"], True),
        (2, ["mp_rank_00_model_states.pt", "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"], True),
        (2, ["mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"], True),
        (2, ["mp_rank_00_model_states.pt", "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"], False),
        (2, ["bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"], False),
        (3, ["zero_pp_rank_1_mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"], True),
        (3, ["mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"], False),
        (1, ["mp_rank_00_model_states.pt", "zero_pp_rank_11_mp_rank_00_optim_states.pt"], False),
    ],
)
def test_a_rank_needs_the_model_states_and_its_own_shard(
    parts: ModuleType, tmp_path: Path, zero_stage: int, files: list[str], present: bool
) -> None:
    assert parts.part_present(tag_folder(tmp_path, *files), zero_stage, 1) is present


def saved(parts: ModuleType, folder: Path, files: dict[str, bytes], run_dir: Path | None = None) -> str:
    """A checkpoint folder saved whole on its node: its files, then its completion mark."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    parts.mark_complete(str(folder), str(run_dir) if run_dir else None)
    return str(folder)


SHARDS = {"mp_rank_00_model_states.pt": b"model" * 100, "zero_pp_rank_0_mp_rank_00_optim_states.pt": b"optim" * 10}


def test_a_checkpoint_counts_once_its_save_ended_and_while_its_files_keep_their_sizes(
    parts: ModuleType, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    parts.saving(str(run_dir))
    assert (run_dir / parts.SAVING_MARK).is_file(), "a stop waits while this is there"
    unmarked = tmp_path / "run/checkpoints/step100"
    unmarked.mkdir(parents=True)
    (unmarked / "mp_rank_00_model_states.pt").write_bytes(b"model")
    assert parts.why_incomplete(str(unmarked)) == "its save did not end (no completion mark)", "files are no proof"

    folder = saved(parts, tmp_path / "run/checkpoints/step50", SHARDS, run_dir)
    assert parts.why_incomplete(folder) is None
    assert not (run_dir / parts.SAVING_MARK).exists(), "the save ended"
    with open(f"{folder}/zero_pp_rank_0_mp_rank_00_optim_states.pt", "r+b") as shard:
        shard.truncate(7)  # a full disk, or a cut
    assert parts.why_incomplete(folder) == "zero_pp_rank_0_mp_rank_00_optim_states.pt is 7 bytes, 50 when saved"
    (tmp_path / "run/checkpoints/step50/mp_rank_00_model_states.pt").unlink()
    assert parts.why_incomplete(folder) == "mp_rank_00_model_states.pt is missing"


def test_a_rank_can_load_a_complete_checkpoint_that_holds_its_own_part(parts: ModuleType, tmp_path: Path) -> None:
    step50 = saved(parts, tmp_path / "step50", SHARDS)
    step100 = saved(parts, tmp_path / "step100", {"mp_rank_00_model_states.pt": b"m"})
    found = parts.loadable({50: step50, 100: step100}, {50: step50, 100: step100}, 2, 0)
    assert found == {50: None, 100: "rank 0's part is missing"}


def test_the_newest_checkpoint_whole_everywhere_is_chosen_and_each_newer_one_skipped_saying_why(
    parts: ModuleType,
) -> None:
    found = [
        ("server1", {50: None, 100: None, 150: None}),
        ("server1", {50: None, 100: None, 150: None}),
        ("server2", {50: None, 100: "optim.pt is 7 bytes, 50 when saved"}),
    ]
    assert parts.newest_everywhere(found) == (
        50,
        [
            "skipped the checkpoint of step 150: server2: not there",
            "skipped the checkpoint of step 100: server2: optim.pt is 7 bytes, 50 when saved",
        ],
    )
    assert parts.newest_everywhere([("server1", {50: None}), ("server2", {50: None})]) == (50, [])
    assert parts.newest_everywhere([("server1", {}), ("server2", {})]) == (None, []), "a new run"
    # A worker reinstalled since: nothing whole everywhere, the run starts over.
    step, skipped = parts.newest_everywhere([("server1", {50: None}), ("server2", {})])
    assert step is None and skipped == ["skipped the checkpoint of step 50: server2: not there"]
