"""Which checkpoint a resumed run can trust on every node, shared by the workloads (train_tiny.py,
llamafactory_train.py, beside it in /opt/dslab/).

With node-local storage (ds_config ``checkpoint.use_node_local_storage``, the Trainer's
``save_on_each_node``) each node keeps its own part of a checkpoint: nothing is shared. A
checkpoint counts only once its save ended on the node: after the save (and a barrier: every
rank wrote its files) each node's first rank writes COMPLETE_MARK into the checkpoint's folder,
naming every file of it and its size. DeepSpeed's ``latest`` and the Trainer's folder are no
proof: a save cut by a stop or a full disk leaves both. Before a resumed run loads anything,
every rank says which checkpoints its node holds whole, with its own part, and all go on from
the newest that every node holds; newer ones are skipped, saying why. While a node saves,
SAVING_MARK is in the run's directory: a stop waits for it to go (assets/host/lib/run-stop.sh).
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Mapping, Sequence

COMPLETE_MARK = "dslab-complete.json"
"""In a checkpoint's folder, once this node's save of it ended: {"files": {path: size}}."""

SAVING_MARK = ".dslab-saving"
"""In the run's directory while this node saves a checkpoint."""

NodeFinding = tuple[str, "dict[int, str | None]"]
"""What one rank found: its host, and for each checkpoint step its node holds, None when it can
load it (complete, its own part there) or why not."""


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


def saving(run_dir: str) -> None:
    """Says, in the run's directory, that this node is saving a checkpoint."""
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, SAVING_MARK), "w", encoding="utf-8") as mark:
        mark.write(str(os.getpid()))


def mark_complete(folder: str, run_dir: str | None = None) -> None:
    """Writes COMPLETE_MARK into FOLDER: every file under it and its size, written whole; then
    this node is no longer saving (RUN_DIR's SAVING_MARK goes)."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, folder)
            if relative != COMPLETE_MARK and not relative.startswith(f"{COMPLETE_MARK}."):
                files[relative] = os.path.getsize(path)
    partial = os.path.join(folder, f"{COMPLETE_MARK}.{os.getpid()}")
    with open(partial, "w", encoding="utf-8") as out:
        json.dump({"files": files}, out, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, os.path.join(folder, COMPLETE_MARK))
    if run_dir is not None:
        try:
            os.remove(os.path.join(run_dir, SAVING_MARK))
        except FileNotFoundError:
            pass


def why_incomplete(folder: str) -> str | None:
    """None when FOLDER holds every file its COMPLETE_MARK names, each of its size; else why not."""
    try:
        with open(os.path.join(folder, COMPLETE_MARK), encoding="utf-8") as mark:
            files = dict(json.load(mark)["files"])
    except FileNotFoundError:
        return "its save did not end (no completion mark)"
    except (ValueError, KeyError, TypeError):
        return "its completion mark is unreadable"
    for relative, size in sorted(files.items()):
        path = os.path.join(folder, relative)
        if not os.path.exists(path):
            return f"{relative} is missing"
        if os.path.getsize(path) != size:
            return f"{relative} is {os.path.getsize(path)} bytes, {size} when saved"
    return None


def loadable(folders: Mapping[int, str], tag_folder: Mapping[int, str], zero_stage: int, rank: int) -> dict[int, str | None]:
    """For each step's checkpoint FOLDERS on this node: None when RANK can load it (complete,
    and its part in TAG_FOLDER, the DeepSpeed tag folder), else why not."""
    found: dict[int, str | None] = {}
    for step, folder in folders.items():
        why = why_incomplete(folder)
        if why is None and not part_present(tag_folder[step], zero_stage, rank):
            why = f"rank {rank}'s part is missing"
        found[step] = why
    return found


def newest_everywhere(found: Sequence[NodeFinding]) -> tuple[int | None, list[str]]:
    """The newest step every rank can load (None: none), and for each newer step some node holds,
    why it is skipped, naming the hosts."""
    steps = sorted({step for _, held in found for step in held}, reverse=True)
    skipped: list[str] = []
    for step in steps:
        reasons = {}
        for host, held in found:
            if step not in held:
                reasons.setdefault(host, "not there")
            elif held[step] is not None:
                reasons.setdefault(host, str(held[step]))
        if not reasons:
            return step, skipped
        skipped.append(f"skipped the checkpoint of step {step}: " + "; ".join(f"{h}: {why}" for h, why in sorted(reasons.items())))
    return None, skipped
