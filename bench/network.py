"""All-reduce bandwidth between two hosts of the simulator, three ways, with the same program
(assets/allreduce_bench.py, gloo on CPU): between the training containers over the overlay,
between the containers on the hosts' network (network.mode host), and between bare
processes on the hosts (the image's files run with chroot, no container: bare-rootfs.sh).
"""

from __future__ import annotations

import json
import statistics
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.lifecycle import BenchStack, bench_stack, hosts_up, log, on_host
from harness.pulumi_cli import REPO

SIZES_MB = (1, 4, 16, 64, 256)
BARE_ROOTFS = REPO / "bench" / "bare-rootfs.sh"
PORT = "29611"
ALLREDUCE = ["python3", "/opt/dslab/allreduce_bench.py", "--sizes-mb", ",".join(map(str, SIZES_MB)), "--iters", "5"]


def rank_environment(rank: int, master: str, ifname: str) -> dict[str, str]:
    return {
        "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": master, "MASTER_PORT": PORT,
        "GLOO_SOCKET_IFNAME": ifname, "USE_LIBUV": "0", "PATH": "/opt/venv/bin:/usr/bin:/bin",
    }  # fmt: skip


def result_of(output: str) -> dict[str, Any]:
    line = next(line for line in output.splitlines() if line.startswith("dslab: allreduce_result "))
    return dict(json.loads(line.removeprefix("dslab: allreduce_result ")))


def in_containers(master: str) -> dict[str, Any]:
    """One all-reduce between the two training containers."""

    def rank(index: int) -> str:
        host = f"server{index + 1}"
        ifname = on_host(host, ["docker", "exec", "llm", "cat", "/run/dslab/socket_ifname"]).strip()
        env = [f"--env={key}={value}" for key, value in rank_environment(index, master, ifname).items()]
        return on_host(host, ["docker", "exec", *env, "llm", *ALLREDUCE])

    with ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(rank, range(2)))
    return result_of(outputs[0])


def bare(master: str) -> dict[str, Any]:
    """One all-reduce between bare processes on the two hosts."""
    script = BARE_ROOTFS.read_bytes()

    def rank(index: int) -> str:
        env = [f"{key}={value}" for key, value in rank_environment(index, master, "eth0").items()]
        return on_host(f"server{index + 1}", ["bash", "-s", "--", "run", *env, "--", *ALLREDUCE], stdin=script)

    with ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(rank, range(2)))
    return result_of(outputs[0])


def medians(results: list[dict[str, Any]]) -> dict[str, float]:
    """size in MiB -> median bus bandwidth (Gbit/s) over the runs."""
    by_size: dict[str, list[float]] = {}
    for result in results:
        for size in result["sizes"]:
            by_size.setdefault(f"{size['size_mb']:g}", []).append(float(size["busbw_gbps"]))
    return {size: round(statistics.median(values), 4) for size, values in by_size.items()}


def allreduce_three_ways(runs: int) -> dict[str, Any]:
    hosts_up(2)
    found: dict[str, list[dict[str, Any]]] = {"overlay": [], "host": [], "bare": []}
    with bench_stack() as stack:
        stack.up()
        master = str(stack.outputs_of("container_ips")["server1"])
        image = str(stack.outputs_of("image_ids")["server1"])
        for run in range(runs):
            found["overlay"].append(in_containers(master))
            log(f"all-reduce overlay {run + 1}/{runs}: {found['overlay'][-1]['busbw_gbps']} Gbit/s at 256 MiB")

        switch_to_host_mode(stack)
        for run in range(runs):
            found["host"].append(in_containers("10.0.18.1"))
            log(f"all-reduce host mode {run + 1}/{runs}: {found['host'][-1]['busbw_gbps']} Gbit/s at 256 MiB")

        script = BARE_ROOTFS.read_bytes()
        try:
            for host in ("server1", "server2"):
                on_host(host, ["bash", "-s", "--", "prepare", image], stdin=script)
            for run in range(runs):
                found["bare"].append(bare("10.0.18.1"))
                log(f"all-reduce bare {run + 1}/{runs}: {found['bare'][-1]['busbw_gbps']} Gbit/s at 256 MiB")
        finally:
            for host in ("server1", "server2"):
                on_host(host, ["bash", "-s", "--", "remove"], stdin=script)
    # After the bare runs (their chroot mounts /sys and /dev), overlays on these hosts carried
    # nothing any more ("No route to host") until the hosts were made again: make them again.
    subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-m", "simhosts", "down"], cwd=REPO, check=True)
    hosts_up(2)
    return {mode: medians(results) for mode, results in found.items()}


def switch_to_host_mode(stack: BenchStack) -> None:
    stack.merge_config({"network": {"mode": "host"}})
    stack.up()
