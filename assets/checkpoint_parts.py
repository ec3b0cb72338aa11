"""What a node holds of a DeepSpeed checkpoint, and the nodes a resume cannot go on with.

Shared by the workloads' resume checks (train_tiny.py, llamafactory_train.py, beside it in
/opt/dslab/). With node-local storage (ds_config ``checkpoint.use_node_local_storage``) each
node keeps its own part of a checkpoint, nothing is shared: before a run loads one, every rank
says which checkpoint its node would load and whether its own part of it is there, and a
resume refuses, naming the hosts, when they do not all hold the same one whole.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

RankFinding = tuple[str, "int | None", bool]
"""What one rank found: its host, the step of the checkpoint its node would load (None: no
checkpoint), and whether that checkpoint holds the rank's own part."""


def part_present(folder: str, zero_stage: int, rank: int) -> bool:
    """Whether FOLDER (one checkpoint's DeepSpeed tag folder, e.g. ``global_step50``) holds what
    RANK loads: up to ZeRO 2 the model states (each node keeps a copy) and, from ZeRO 1, the
    rank's optimizer shard; with ZeRO 3 the rank's own model and optimizer shards."""
    if zero_stage >= 3:
        needed = [f"zero_pp_rank_{rank}_mp_rank_*_model_states.pt", f"*zero_pp_rank_{rank}_mp_rank_*_optim_states.pt"]
    elif zero_stage >= 1:
        needed = ["mp_rank_00_model_states.pt", f"*zero_pp_rank_{rank}_mp_rank_*_optim_states.pt"]
    else:
        needed = ["mp_rank_00_model_states.pt"]
    return all(glob.glob(os.path.join(folder, pattern)) for pattern in needed)


def resume_refusal(found: Sequence[RankFinding], where: str) -> str | None:
    """Why the ranks cannot load their checkpoints together (FOUND is per rank, in rank order;
    rank 0's checkpoint is the one to resume from), naming the hosts; None when they can."""
    wanted = found[0][1]
    apart = sorted({host for host, step, present in found if step != wanted or (step is not None and not present)})
    if not apart:
        return None
    hosts = ", ".join(apart)
    one = len(apart) == 1
    if wanted is None:
        return (f"cannot start afresh: {hosts} {'holds' if one else 'hold'} checkpoints in {where} that the first node "
                "lacks; remove them or set training.resume: never")  # fmt: skip
    return (f"cannot resume from the checkpoint of step {wanted}: {hosts} {'lacks its' if one else 'lack their'} part "
            f"of it in {where}; set training.resume: never to start over")  # fmt: skip
