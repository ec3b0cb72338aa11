#!/usr/bin/env python3
"""All-reduce bandwidth across the ranks of a torch.distributed job (gloo on CPU, NCCL on GPUs).

Started by DeepSpeed's launcher (``deepspeed --hostfile ... allreduce_bench.py``) or by hand
with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set. For every message size it times
``iters`` all-reduces (after ``warmup`` untimed ones) and reports the median, as NCCL's
tests do:

    algbw = size / time            busbw = algbw * 2 * (n - 1) / n

busbw is what each link carries in a ring, comparable across world sizes. One rank has no link:
its all-reduce moves nothing, so it has no busbw (null; ``busbw_gbps=none``). Rank 0 prints one
line per size, ``dslab: allreduce size_mb=64 time_ms=... algbw_gbps=... busbw_gbps=...``
(gigabits per second), then ``dslab: allreduce_result {json}`` with every size, and writes
the JSON to ``--json`` when given.

usage: allreduce_bench.py [--sizes-mb 1,16,64] [--iters 5] [--warmup 1] [--json FILE]
                          [--timeout-s 120] [--local_rank R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

FLOAT32_BYTES = 4
MEGABYTE = 1 << 20


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; ``--local_rank`` is added by DeepSpeed's launcher."""
    parser = argparse.ArgumentParser(prog="allreduce_bench.py", description="All-reduce bandwidth.")
    parser.add_argument("--sizes-mb", default="1,16,64", help="message sizes in MiB, comma separated")
    parser.add_argument("--iters", type=int, default=5, help="timed all-reduces per size (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed all-reduces per size (default 1)")
    parser.add_argument("--json", default="", help="rank 0 writes the result here")
    parser.add_argument("--timeout-s", type=int, default=120, help="collective timeout (default 120)")
    parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", "0")))
    args = parser.parse_args(argv)
    try:
        args.sizes = [float(size) for size in args.sizes_mb.split(",") if size]
    except ValueError:
        parser.error(f"--sizes-mb takes numbers like 1,16,64, got {args.sizes_mb!r}")
    if not args.sizes or min(args.sizes) <= 0 or args.iters < 1 or args.warmup < 0:
        parser.error("--sizes-mb must be positive, --iters at least 1, --warmup not negative")
    return args


def bus_bandwidth_gbps(size_bytes: float, seconds: float, world_size: int) -> float | None:
    """NCCL's bus bandwidth of one all-reduce, in gigabits per second; None for one rank, whose
    all-reduce copies nothing anywhere (its "bandwidth" would be the size over a no-op's time)."""
    if world_size < 2:
        return None
    algbw = size_bytes * 8 / seconds / 1e9
    return algbw * 2 * (world_size - 1) / world_size


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    device = torch.device("cuda", args.local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=args.timeout_s))
    rank, world_size = dist.get_rank(), dist.get_world_size()

    results: list[dict[str, Any]] = []
    for size_mb in args.sizes:
        elements = max(1, int(size_mb * MEGABYTE / FLOAT32_BYTES))
        tensor = torch.ones(elements, dtype=torch.float32, device=device)
        times: list[float] = []
        for iteration in range(args.warmup + args.iters):
            dist.barrier()
            if cuda:
                torch.cuda.synchronize()
            started = time.perf_counter()
            dist.all_reduce(tensor)
            if cuda:
                torch.cuda.synchronize()
            if iteration >= args.warmup:
                times.append(time.perf_counter() - started)
        # The slowest rank's time is the collective's time.
        slowest = torch.tensor([statistics.median(times)], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        seconds = float(slowest.item())
        size_bytes = elements * FLOAT32_BYTES
        result = {
            "size_mb": size_mb,
            "time_ms": round(seconds * 1e3, 3),
            "algbw_gbps": round(size_bytes * 8 / seconds / 1e9, 4),
            "busbw_gbps": rounded(bus_bandwidth_gbps(size_bytes, seconds, world_size)),
        }
        results.append(result)
        if rank == 0:
            shown = " ".join(f"{key}={'none' if value is None else value}" for key, value in result.items())
            print(f"dslab: allreduce {shown}", flush=True)

    if rank == 0:
        summary = {
            "backend": backend,
            "world_size": world_size,
            "iters": args.iters,
            "sizes": results,
            # The largest message tells the link's bandwidth; small ones tell its latency.
            "busbw_gbps": results[-1]["busbw_gbps"],
        }
        print("dslab: allreduce_result " + json.dumps(summary), flush=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(summary, out)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
