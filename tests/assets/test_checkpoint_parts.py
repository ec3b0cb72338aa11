"""assets/checkpoint_parts.py: which files a rank needs of a DeepSpeed checkpoint per ZeRO stage,
and the hosts a resume refuses to go on with (both workloads' check)."""

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


def test_nodes_that_all_hold_the_first_nodes_checkpoint_go_on(parts: ModuleType) -> None:
    found = [("server1", 100, True), ("server1", 100, True), ("server2", 100, True)]
    assert parts.resume_refusal(found, "/opt/dslab/results/r1") is None
    assert parts.resume_refusal([("server1", None, False), ("server2", None, False)], "/r") is None, "a new run"


def test_a_node_without_its_part_or_with_another_newest_is_named(parts: ModuleType) -> None:
    found = [("server1", 150, True), ("server2", 150, False), ("server3", 100, True), ("server4", 150, True)]
    refusal = parts.resume_refusal(found, "/opt/dslab/results/r1")
    assert refusal == (
        "cannot resume from the checkpoint of step 150: server2, server3 lack their part of it in "
        "/opt/dslab/results/r1; set training.resume: never to start over"
    )


def test_nodes_holding_checkpoints_the_first_lacks_are_named(parts: ModuleType) -> None:
    refusal = parts.resume_refusal([("server1", None, False), ("server2", 50, True)], "/opt/dslab/results/r1")
    assert refusal is not None and refusal.startswith(
        "cannot start afresh: server2 holds checkpoints in /opt/dslab/results/r1"
    )
