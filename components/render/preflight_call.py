"""The preflight's call (pure): the arguments of the image's preflight.sh, run by the training
step right before a new run (assets/host/deepspeed-launch.sh), and what bounds it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.config import PreflightConfig


@dataclass(frozen=True)
class PreflightCall:
    bound_s: int
    """What its checks may take, by their own bounds (0: the all-reduce has none)."""
    args: tuple[str, ...]
    """preflight.sh's arguments: every node answers ssh (waiting up to reach_timeout), every
    node sees the same hostfile and addresses, then a short all-reduce (ARGV) across all nodes,
    failing below the minimum bus bandwidth."""


def preflight_call(settings: PreflightConfig, *, workdir: str, run_dir: str, argv: Sequence[str]) -> PreflightCall:
    """The call for SETTINGS; ARGV is the all-reduce's deepspeed command (components.render.launch_argv)."""
    return PreflightCall(
        bound_s=settings.reach_timeout + settings.run_timeout if settings.run_timeout else 0,
        args=(
            *("--workdir", workdir, "--hostfile", f"{run_dir}/hostfile", "--log", f"{run_dir}/preflight.log"),
            *("--reach-timeout", str(settings.reach_timeout), "--run-timeout", str(settings.run_timeout)),
            *("--min-busbw", f"{settings.min_busbw_gbps:g}", "--", *argv),
        ),
    )


def busbw_gbps(preflight: Any) -> float | None:
    """The all-reduce's bus bandwidth from preflight.sh's result (None for one rank, or no preflight)."""
    if not isinstance(preflight, dict) or preflight.get("busbw_gbps") is None:
        return None
    return float(preflight["busbw_gbps"])
