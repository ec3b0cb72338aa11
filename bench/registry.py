"""Image distribution through a registry on the manager against today's copy through the
operator, on the same hosts, alternating runs (bench/registry-ship.sh does the work).

The image is the training image as the manager's build cache holds it (lifecycle's anchor);
before each run no worker holds it, as on new hosts (each still holds the base image).
"""

from __future__ import annotations

import subprocess
from typing import Any

from bench.lifecycle import CACHE_ANCHOR, SSH_CONFIG, bench_stack, hosts_up, keep_build_cache, log, median
from harness.pulumi_cli import REPO

SCRIPT = REPO / "bench" / "registry-ship.sh"


def registry_ship(mode: str, hosts: list[str]) -> str:
    completed = subprocess.run(
        ["bash", str(SCRIPT), str(SSH_CONFIG), mode, CACHE_ANCHOR, *hosts],
        capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"registry-ship.sh {mode}: {completed.stderr[-2000:]}")
    return completed.stdout.strip()


def registry_against_copy(hosts: int, runs: int) -> dict[str, Any]:
    """Median copy (save once, streamed to every worker through this machine) and median
    registry distribution (push once, every worker pulls) to `hosts - 1` workers."""
    hosts_up(hosts)
    with bench_stack() as stack:
        keep_build_cache(stack)
        config = stack.config()
        named = [f"{host.name}={host.address}" for host in config.hosts_manager_first]
    registry_ship("setup", named)
    copy: list[float] = []
    push: list[float] = []
    pull: list[float] = []
    try:
        for run in range(runs):
            copy.append(float(registry_ship("copy", named)))
            pushed, pulled = (float(value) for value in registry_ship("registry", named).split())
            push.append(pushed)
            pull.append(pulled)
            log(f"{hosts} hosts, run {run + 1}/{runs}: copy {copy[-1]:.1f} s, registry {pushed:.1f} + {pulled:.1f} s")
    finally:
        registry_ship("teardown", named)
    registry = [pushed + pulled for pushed, pulled in zip(push, pull)]
    return {"hosts": hosts, "runs": runs, "copy_s": median(copy), "registry_s": median(registry),
            "push_s": median(push), "pull_s": median(pull),
            "copy_all_s": copy, "push_all_s": push, "pull_all_s": pull}  # fmt: skip
