#!/usr/bin/env python3
"""A tiny DeepSpeed training run that proves a cluster works end to end.

An MLP fits a fixed, mildly nonlinear function of 16 inputs from 512 seeded samples with ZeRO
(the stage and batch sizes come from the ds_config). Rank 0 prints machine-parseable lines:

    dslab: world_size=2
    dslab: step=1 loss=0.912345        (one per step: the mean loss over the whole data set
    ...                                 after the step, so it falls smoothly)
    dslab: finished steps=20 optimizer_steps=20 final_loss=0.123456

and every rank prints ``dslab: rank=R local_rank=L host=NAME``. Any exception, on any rank,
ends the process with a non-zero status (``--fail_rank``/``--fail_step`` inject one, for
tests).

With ``--output_dir DIR`` every rank saves a DeepSpeed checkpoint into ``DIR/checkpoints`` every
``--save_steps`` steps and at the end (each node its own part, marked complete once saved:
checkpoint_parts.py), a run whose DIR holds one goes on from the newest that every node holds
whole (``dslab: resumed from step=N``, after a ``dslab: skipped ...`` line for each newer one),
and rank 0 writes ``DIR/result.json`` (steps, world size, final loss) at the end.

usage: train_tiny.py --deepspeed CONFIG [--steps N] [--lr LR] [--seed S] [--output_dir DIR]
                     [--save_steps N] [--local_rank R]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from checkpoint_parts import loadable, mark_complete, newest_everywhere, saving

INPUTS = 16
HIDDEN = 64
SAMPLES = 512


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; ``--local_rank`` is added by DeepSpeed's launcher."""
    parser = argparse.ArgumentParser(
        prog="train_tiny.py",
        description="Tiny DeepSpeed regression for cluster checks.",
    )
    parser.add_argument(
        "--deepspeed",
        "--deepspeed_config",
        dest="config",
        required=True,
        metavar="CONFIG",
        help="ds_config.json path (both flag spellings are accepted)",
    )
    parser.add_argument("--steps", type=_positive_int, default=20, help="optimizer steps (default 20)")
    parser.add_argument("--lr", type=float, default=0.002, help="AdamW learning rate (default 0.002)")
    parser.add_argument("--seed", type=int, default=1234, help="seed of data and weights (default 1234)")
    parser.add_argument(
        "--local_rank",
        "--local-rank",
        dest="local_rank",
        type=int,
        default=int(os.environ.get("LOCAL_RANK", "-1")),
        help="set by the launcher (default: $LOCAL_RANK or -1)",
    )
    parser.add_argument(
        "--timeout_s",
        type=_positive_int,
        default=300,
        help="collective timeout in seconds, so a lost peer ends the run (default 300)",
    )
    parser.add_argument(
        "--output_dir",
        default=None,
        help="the run's directory: rank 0 writes result.json there at the end (default: none)",
    )
    parser.add_argument(
        "--save_steps",
        type=_positive_int,
        default=50,
        help="with --output_dir: a checkpoint every N steps and at the end (default 50)",
    )
    parser.add_argument(
        "--step_pause_s",
        type=float,
        default=0.0,
        help="test hook: seconds every rank waits after each step, for a long run that costs little CPU (default 0)",
    )
    parser.add_argument("--fail_rank", type=int, default=None, help="test hook: this rank raises")
    parser.add_argument(
        "--fail_step",
        type=_positive_int,
        default=1,
        help="test hook: at this step (default 1)",
    )
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def report(line: str) -> None:
    """One ``dslab:`` line, flushed at once (pdsh relays lines as they come)."""
    print(f"dslab: {line}", flush=True)


def train(args: argparse.Namespace) -> float:
    """Run the steps; return the final loss."""
    # Only in the image; the operator's venv (where mypy runs) has neither.
    import deepspeed  # type: ignore[import-not-found,unused-ignore]
    import torch  # type: ignore[import-not-found,unused-ignore]
    import torch.distributed as dist  # type: ignore[import-not-found,unused-ignore]

    deepspeed.init_distributed(timeout=timedelta(seconds=args.timeout_s))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    report(f"rank={rank} local_rank={args.local_rank} host={socket.gethostname()}")

    generator = torch.Generator().manual_seed(args.seed)
    inputs = torch.randn(SAMPLES, INPUTS, generator=generator)
    weights = torch.randn(INPUTS, 1, generator=generator) / INPUTS**0.5
    # Mostly linear with a small bend: with AdamW at lr 0.002 and 8 samples a step, the
    # whole-set loss fell at every one of 20 steps for 40 seeds out of 40 (to 0.17x on
    # average); a stronger nonlinearity made it wander up and down.
    targets = inputs @ weights + 0.3 * torch.sin(3.0 * inputs[:, :1])

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(INPUTS, HIDDEN),
        torch.nn.Tanh(),
        torch.nn.Linear(HIDDEN, HIDDEN),
        torch.nn.Tanh(),
        torch.nn.Linear(HIDDEN, 1),
    )
    # A torch optimizer, not one named in the ds_config: DeepSpeed's own CPU Adam would
    # JIT-compile another op. ZeRO accepts it with zero_allow_untested_optimizer.
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    engine, _, _, _ = deepspeed.initialize(
        model=model,
        model_parameters=model.parameters(),
        optimizer=optimizer,
        config=args.config,
    )
    micro = engine.train_micro_batch_size_per_gpu()
    accumulation = engine.gradient_accumulation_steps()
    if rank == 0:
        report(f"world_size={world_size}")
    checkpoints = os.path.join(args.output_dir, CHECKPOINTS) if args.output_dir else None
    done = resume(engine, checkpoints, rank, dist) if checkpoints else 0
    first_on_node = args.local_rank <= 0  # the first rank on its node (-1: run without the launcher)

    loss_fn = torch.nn.MSELoss()
    order = torch.randperm(SAMPLES, generator=generator)
    per_step = micro * accumulation * world_size
    loss_value = float("nan")
    for step in range(done + 1, args.steps + 1):
        if args.fail_rank == rank and args.fail_step == step:
            raise RuntimeError(f"injected failure on rank {rank} at step {step}")
        start = ((step - 1) * per_step) % SAMPLES
        for micro_step in range(accumulation):
            offset = start + (micro_step * world_size + rank) * micro
            index = order[torch.arange(offset, offset + micro) % SAMPLES]
            x, y = inputs[index].to(engine.device), targets[index].to(engine.device)
            loss = loss_fn(engine(x), y)
            engine.backward(loss)
            engine.step()
        with torch.no_grad():
            # Every rank holds the full weights after the step; the whole-set loss is the
            # same everywhere and falls smoothly, unlike one micro batch's.
            full = loss_fn(engine(inputs.to(engine.device)), targets.to(engine.device))
        loss_value = float(full)
        if rank == 0:
            report(f"step={step} loss={loss_value:.6f}")
        if checkpoints and (step % args.save_steps == 0 or step == args.steps):
            # Every rank writes its own shard, on its own node (use_node_local_storage); once all
            # have, each node's first rank marks its part complete.
            if first_on_node:
                saving(args.output_dir)
            engine.save_checkpoint(checkpoints, tag=checkpoint_tag(step), client_state={"step": step})
            dist.barrier()
            if first_on_node:
                mark_complete(os.path.join(checkpoints, checkpoint_tag(step)), args.output_dir)
        if args.step_pause_s > 0:
            time.sleep(args.step_pause_s)
    dist.barrier()
    if rank == 0:
        if args.output_dir:
            write_result(
                args.output_dir,
                {"steps": args.steps, "optimizer_steps": engine.global_steps, "world_size": world_size,
                 "final_loss": loss_value},
            )  # fmt: skip
        # optimizer_steps: the engine's count, which a resumed run takes over from its checkpoint.
        report(f"finished steps={args.steps} optimizer_steps={engine.global_steps} final_loss={loss_value:.6f}")
    dist.destroy_process_group()
    return loss_value


CHECKPOINTS = "checkpoints"
"""The checkpoints' folder in the run's directory; DeepSpeed's `latest` there names the newest."""


def checkpoint_tag(step: int) -> str:
    return f"step{step}"


def held_steps(checkpoints: str) -> dict[int, str]:
    """This node's checkpoint folders by step."""
    held = {}
    for name in os.listdir(checkpoints) if os.path.isdir(checkpoints) else []:
        if name.startswith("step") and name[4:].isdigit() and os.path.isdir(os.path.join(checkpoints, name)):
            held[int(name[4:])] = os.path.join(checkpoints, name)
    return held


def resume(engine: Any, checkpoints: str, rank: int, dist: Any) -> int:
    """Loads the newest checkpoint every node holds whole, when there is one; the steps it holds
    (0 for none). Each newer one is skipped, saying why."""
    held = held_steps(checkpoints)
    mine = (socket.gethostname(), loadable(held, held, engine.zero_optimization_stage(), rank))
    found: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(found, mine)
    done, skipped = newest_everywhere(found)
    if rank == 0:
        for line in skipped:
            report(line)
        if done is None and skipped:
            report("no checkpoint is whole on every node: starting over")
    if done is None:
        return 0
    engine.load_checkpoint(checkpoints, tag=checkpoint_tag(done))
    if rank == 0:
        report(f"resumed from step={done}")
    return done


def write_result(output_dir: str, result: dict[str, float | int]) -> None:
    """``result.json`` in the run's directory (made if missing), written whole or not at all."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "result.json")
    with open(f"{path}.tmp", "w", encoding="utf-8") as out:
        json.dump(result, out)
    os.replace(f"{path}.tmp", path)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, train; an exception propagates and Python exits with status 1."""
    train(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
