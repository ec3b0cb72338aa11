"""Where the machine's CPU goes while a command runs (e.g. the end-to-end tier), split by who
spends it: the simulated hosts (their engines, sshd, image builds and loads), the containers
those engines run (training, preflight, the containers' sshd), and the rest of the machine (the
operator's side: pulumi, its providers, the program, ssh clients, pytest).

    python -m bench.cpu_split -- make test-e2e

Reads cgroup v1 cpuacct every 2 s (a container's cgroup goes with the container, so each one's
last reading counts) and prints CPU seconds per part, and the average number of busy cores. On
a 2-core machine an average near 2 means the command is bound by CPU, not by waiting.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
SAMPLE_S = 2.0


def usage_ns(cgroup: Path) -> int | None:
    try:
        return int((cgroup / "cpuacct.usage").read_text())
    except (OSError, ValueError):
        return None


def readings() -> dict[str, int]:
    """cgroup (relative to the hierarchy's root) -> its CPU time so far, ns."""
    found: dict[str, int] = {}
    groups = [CPUACCT, *(CPUACCT / "docker").glob("*/"), *(c for top in CPUACCT.glob("dslab*/") for c in top.glob("*/"))]
    for cgroup in groups:
        value = usage_ns(cgroup)
        if value is not None:
            found[str(cgroup.relative_to(CPUACCT))] = value
    return found


def part_of(cgroup: str) -> str:
    if cgroup == ".":
        return "machine"
    if cgroup.startswith("docker/"):
        return "simulated hosts (engines, sshd, builds, loads)"
    return "containers on the hosts (training, preflight, sshd)"


def main(command: list[str]) -> int:
    if not (CPUACCT / "cpuacct.usage").exists():
        print("cgroup v1 cpuacct not found: nothing to measure", file=sys.stderr)
        return 2
    first = readings()
    last = dict(first)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_S):
            for cgroup, value in readings().items():
                last[cgroup] = max(last.get(cgroup, 0), value)

    sampler = threading.Thread(target=sample, daemon=True)
    started = time.monotonic()
    sampler.start()
    code = subprocess.call(command)
    done.set()
    sampler.join()
    for cgroup, value in readings().items():
        last[cgroup] = max(last.get(cgroup, 0), value)
    wall = time.monotonic() - started
    spent = {cgroup: (value - first.get(cgroup, 0)) / 1e9 for cgroup, value in last.items()}
    parts: dict[str, float] = {}
    for cgroup, seconds in spent.items():
        if cgroup != ".":
            parts[part_of(cgroup)] = parts.get(part_of(cgroup), 0.0) + seconds
    total = spent.get(".", 0.0)
    parts["the rest (operator side: pulumi, providers, program, ssh, pytest)"] = total - sum(parts.values())
    print(f"\nCPU while `{' '.join(command)}` ran: {total:.0f} s in {wall:.0f} s wall, {total / wall:.2f} cores busy")
    for part, seconds in sorted(parts.items(), key=lambda item: -item[1]):
        print(f"  {seconds:7.0f} s  {100 * seconds / total if total else 0:3.0f}%  {part}")
    return code


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    if not arguments:
        sys.exit("usage: python -m bench.cpu_split -- COMMAND...")
    sys.exit(main(arguments))
