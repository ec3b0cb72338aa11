"""`python -m bench [--runs N] [--hosts 2,4,8] [--distribution-hosts 2] [--only PART,...]`

Measures on the simulated hosts (it brings up as many hosts as each part needs) and writes
bench/results.json and bench/results.png. Parts: floor, steady, cold, distribution, allreduce,
registry.
A part left out keeps its figures from the previous results.json, so parts can be rerun alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from bench import lifecycle, network, registry, report

HERE = Path(__file__).resolve().parent
PARTS = ("floor", "steady", "cold", "allreduce", "distribution", "registry")


def host_counts(text: str) -> list[int]:
    return [int(count) for count in text.split(",") if count]


def save(results: dict[str, Any], path: Path) -> None:
    """What is measured so far, so that a later part's failure loses none of it."""
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    parser.add_argument("--runs", type=int, default=3, help="measured runs per figure, after a warm-up (default 3)")
    parser.add_argument(
        "--noop-runs", type=int, default=9, help="no-op preview/up runs, each beside the empty program's (default 9)"
    )
    parser.add_argument("--hosts", type=host_counts, default=[2, 4, 8], help="cold up lab sizes (default 2,4,8)")
    parser.add_argument(
        "--large-runs", type=int, default=1, help="measured cold-up runs on labs above 2 hosts (default 1)"
    )
    parser.add_argument(
        "--warm-up",
        action="store_true",
        help="a discarded tool/floor round before the measured cold ups",
    )
    parser.add_argument(
        "--distribution-hosts", type=host_counts, default=[2],
        help="lab sizes for build-once vs every-host (default 2: above it, warming every worker's build cache means N-1 builds from nothing at once)",
    )
    parser.add_argument(
        "--registry-hosts", type=host_counts, default=[2, 4, 8],
        help="host counts for the registry against the copy (default 2,4,8)",
    )  # fmt: skip
    parser.add_argument("--only", default=",".join(PARTS), help=f"parts to run (default all: {','.join(PARTS)})")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"--only: unknown part(s) {', '.join(sorted(unknown))}; expected some of {', '.join(PARTS)}")

    path = HERE / "results.json"
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    started = time.monotonic()
    if "floor" in parts:
        results["empty_preview_s"] = lifecycle.empty_program_preview(args.runs)
    if "steady" in parts:
        results["steady_state"] = lifecycle.steady_state(args.runs, args.noop_runs)
    if "cold" in parts:
        # Lab sizes measured now replace their earlier figures; the others stay.
        measured = {entry["hosts"]: entry for entry in results.get("cold_up", [])}
        for hosts in args.hosts:
            runs = args.runs if hosts <= 2 else args.large_runs
            measured[hosts] = lifecycle.cold_up_against_floor(hosts, runs, warm_up=args.warm_up)
            results["cold_up"] = [measured[hosts] for hosts in sorted(measured)]
            save(results, path)
    if "allreduce" in parts:
        results["allreduce_busbw_gbps"] = network.allreduce_three_ways(args.runs)
    if "distribution" in parts:
        shipped = {entry["hosts"]: entry for entry in results.get("distribution", [])}
        for hosts in args.distribution_hosts:
            # Workers building from nothing all at once: only on 2 hosts (7 at once on 2 cores take ~30 min).
            runs = args.runs if hosts <= 2 else args.large_runs
            shipped[hosts] = lifecycle.distribution(hosts, runs, cold_builds=hosts <= 2)
            results["distribution"] = [shipped[hosts] for hosts in sorted(shipped)]
            save(results, path)
    if "registry" in parts:
        compared = {entry["hosts"]: entry for entry in results.get("registry_vs_copy", [])}
        for hosts in args.registry_hosts:
            compared[hosts] = registry.registry_against_copy(hosts, args.runs)
            results["registry_vs_copy"] = [compared[hosts] for hosts in sorted(compared)]
            save(results, path)
    results["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
    results["runs"] = args.runs
    lifecycle.hosts_up(2)
    report.write(results, HERE)
    print(f"bench: done in {time.monotonic() - started:.0f} s; bench/results.json, bench/results.png", flush=True)


if __name__ == "__main__":
    main()
