#!/usr/bin/env python3
"""LLaMA-Factory's training entry point for the DeepSpeed launcher (its repository's
src/train.py, which the pip package lacks), with arguments as command-line flags.

Usage (what components/render/launch_argv.py renders):
    deepspeed --hostfile H ... /opt/dslab/llamafactory_train.py --deepspeed ds_config.json
        --stage sft --do_train true --model_name_or_path DIR ...

The launcher prepends ``--local_rank=N``, which LLaMA-Factory's flag mode accepts (a YAML
file would have to be the first argument, so YAML mode cannot be used).

Before handing over, the process group is initialised with the accelerator's own backend
(gloo on CPU, nccl on CUDA). Left to itself, accelerate picks "mpi" on CPU whenever torch
is built with MPI, as Debian's is, and its gather then fails with "no support for
_allgather_base in MPI process group"; the Trainer's --ddp_backend is ignored with
--deepspeed.

The Trainer's optimizer is also made without empty parameter groups (see
:func:`drop_empty_param_groups`), or a LoRA run fails at its first step on torch 2.10 and
later, as on the GPU check's torch 2.11 (docs/gpu.md). DeepSpeed's own messages are logged
from INFO up: its ranks log only warnings otherwise, and the log would not show the
configuration the engine resolved from ds_config.json's "auto" values (fp16 or not, loss
scaling, ZeRO stage), nor skipped fp16 steps. And every checkpoint this node holds in the
run's directory names its DeepSpeed tag (see :func:`name_latest_checkpoints`), so that a
resumed run loads it on every node. Each checkpoint is marked complete on its node once every
rank saved it (:class:`MarkCheckpoints`, checkpoint_parts.py); when the Trainer is to resume, it
goes on from the newest checkpoint every node holds whole, named on its command line, and
skips the newer ones, saying why (see :func:`resume_everywhere`).
"""

from __future__ import annotations

import glob
import json
import os
import re
import socket
import sys
from collections.abc import Sequence
from typing import Any

from checkpoint_parts import loadable, mark_complete, newest_everywhere, saving

TRAINER_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
"""A checkpoint folder as the Trainer names it and looks for it (transformers' get_last_checkpoint)."""


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value after FLAG on the command line (the next word; "true" for a flag given alone), if any."""
    for index, word in enumerate(argv):
        if word == flag:
            following = argv[index + 1] if index + 1 < len(argv) else "--"
            return "true" if following.startswith("--") else following
    return None


def trainer_resumes(argv: Sequence[str]) -> bool:
    """Whether LLaMA-Factory looks for a checkpoint in the output directory to go on from: not
    when the command line names one itself or says to overwrite the directory."""
    overwrite = flag_value(argv, "--overwrite_output_dir") or "false"
    return flag_value(argv, "--resume_from_checkpoint") is None and overwrite.lower() not in ("true", "1", "yes")


def zero_stage_of(ds_config: str | None) -> int:
    """The ZeRO stage the ds_config sets (0 when it sets none)."""
    if ds_config is None:
        return 0
    with open(ds_config, encoding="utf-8") as config:
        stage = json.load(config).get("zero_optimization", {}).get("stage", 0)
    return stage if isinstance(stage, int) else 0


def held_checkpoints(output_dir: str) -> dict[int, str]:
    """This node's Trainer checkpoint folders by step."""
    names = os.listdir(output_dir) if os.path.isdir(output_dir) else []
    return {
        int(match.group(1)): os.path.join(output_dir, name)
        for name in names
        if (match := TRAINER_CHECKPOINT.match(name)) and os.path.isdir(os.path.join(output_dir, name))
    }


def name_latest_checkpoints(output_dir: str) -> list[str]:
    """Writes DeepSpeed's ``latest`` file into each of this node's Trainer checkpoints that has
    DeepSpeed's shards (``global_stepN``) but no such file; returns the checkpoints it named.

    DeepSpeed writes ``latest`` on the first rank's node only, even with node-local storage,
    and the Trainer's resume reads it on every node: without it, a rank on another node finds
    no checkpoint to load and the resumed run fails ("failed to resume from checkpoint")."""
    named = []
    for folder in sorted(glob.glob(os.path.join(output_dir, "checkpoint-*"))):
        tags = sorted(glob.glob(os.path.join(folder, "global_step*")))
        latest = os.path.join(folder, "latest")
        if tags and not os.path.exists(latest):
            # Every local rank may do this at once: the same text, written whole.
            partial = f"{latest}.{os.getpid()}"
            with open(partial, "w", encoding="utf-8") as out:
                out.write(os.path.basename(tags[-1]))
            os.replace(partial, latest)
            named.append(folder)
    return named


def resume_everywhere(output_dir: str, zero_stage: int) -> list[str]:
    """The flags that make every rank go on from the same checkpoint: the newest that every node
    holds whole (``--resume_from_checkpoint``); when none is, ``--overwrite_output_dir`` (else
    the Trainer goes on from its own node's newest). Every rank says what its node holds."""
    import torch.distributed as dist

    held = held_checkpoints(output_dir)
    tags = {step: os.path.join(folder, f"global_step{step}") for step, folder in held.items()}
    found: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(found, (socket.gethostname(), loadable(held, tags, zero_stage, dist.get_rank())))
    step, skipped = newest_everywhere(found)
    if dist.get_rank() == 0:
        for line in skipped:
            print(f"dslab: {line}", flush=True)
        if step is None and skipped:
            print("dslab: no checkpoint is whole on every node: starting over", flush=True)
    if step is not None:
        return ["--resume_from_checkpoint", os.path.join(output_dir, f"checkpoint-{step}")]
    return ["--overwrite_output_dir", "true"] if skipped else []


def mark_checkpoints(output_dir: str) -> Any:
    """A TrainerCallback that says, in the run's directory, when this node saves a checkpoint,
    and marks it complete once every rank saved it (checkpoint_parts.py)."""
    from transformers import TrainerCallback

    class MarkCheckpoints(TrainerCallback):  # type: ignore[misc,unused-ignore]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if control.should_save and args.local_process_index == 0:
                saving(output_dir)

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            import torch.distributed as dist

            dist.barrier()  # every rank's files are written
            if args.local_process_index == 0:
                mark_complete(os.path.join(output_dir, f"checkpoint-{state.global_step}"), output_dir)

    return MarkCheckpoints()


def without_empty_param_groups(optimizer: Any) -> Any:
    """``optimizer`` with the parameter groups that hold no parameter removed, in place."""
    optimizer.param_groups[:] = [group for group in optimizer.param_groups if group["params"]]
    return optimizer


def drop_empty_param_groups(trainer_class: Any) -> None:
    """Make ``trainer_class.create_optimizer`` leave out empty parameter groups.

    The Trainer groups the trainable parameters into "decay" and "no decay" (biases and
    norms); a LoRA model trains neither, so the second group is empty. The Trainer builds
    its learning-rate scheduler on both groups, then DeepSpeed drops the empty one from the
    optimizer: torch 2.10 and later check that the two agree at every scheduler step
    ("ValueError: zip() argument 2 is longer than argument 1"), where earlier torch ignored
    the extra rate. Without the empty group both see the same groups from the start.
    """
    create_optimizer = trainer_class.create_optimizer

    def create_optimizer_without_empty_groups(self: Any) -> Any:
        return without_empty_param_groups(create_optimizer(self))

    trainer_class.create_optimizer = create_optimizer_without_empty_groups


def main() -> None:
    import deepspeed
    from deepspeed.accelerator import get_accelerator
    from deepspeed.utils import set_log_level_from_string

    set_log_level_from_string("info")
    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name())

    from llamafactory.train.tuner import run_exp
    from transformers import Trainer

    drop_empty_param_groups(Trainer)
    output_dir = flag_value(sys.argv, "--output_dir")
    if output_dir is None:
        run_exp()
        return
    name_latest_checkpoints(output_dir)
    if trainer_resumes(sys.argv):  # the same command line everywhere: every rank takes part
        sys.argv += resume_everywhere(output_dir, zero_stage_of(flag_value(sys.argv, "--deepspeed")))
    run_exp(callbacks=[mark_checkpoints(output_dir)])


if __name__ == "__main__":
    main()
