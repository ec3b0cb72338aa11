"""Fixtures for the simulator's tests: 2 real simulated hosts of a lab of their own (lab 9, or
``DSLAB_SIMHOSTS_TEST_LAB``), brought up once per session. Other labs may run beside it: what the
tests compare is only this lab's."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The simulator package lives at the repo root; `pytest` (unlike `python -m pytest`) does not put
# the working directory on sys.path, and an __init__.py here would shadow `simhosts` itself.
_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from simhosts import hosts, lifecycle, paths  # noqa: E402
from simhosts.plan import HostSpec, SimLab  # noqa: E402

LAB = SimLab(int(os.environ.get("DSLAB_SIMHOSTS_TEST_LAB", "9")))  # tests/conftest.py holds it
"""The simulator's own tests take it down and up: a lab no test module of the product uses."""


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers this folder uses."""
    config.addinivalue_line("markers", "e2e: runs against real engines and containers (slow, needs root)")
    config.addinivalue_line("markers", "simhosts: tests of the host simulator (simhosts/)")


@dataclass(frozen=True)
class MachineSnapshot:
    """What a lab may change on the machine, to compare before `up` and after `down`: only what is
    named like that lab's (other labs come and go beside it)."""

    containers: frozenset[str]
    volumes: frozenset[str]
    networks: frozenset[str]
    links: frozenset[str]
    iptables: tuple[str, ...]
    mounts: frozenset[str]
    lab_cgroups: frozenset[str]
    lab_processes: tuple[str, ...]


def _out(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def take_snapshot(lab: SimLab = LAB, mount_points: frozenset[str] = frozenset()) -> MachineSnapshot:
    """Record the lab's containers, volumes, network, links (its bridge and what is attached to
    it), firewall rules (those naming its bridge or subnet), the mounts among ``mount_points``
    (the lab's host containers' and volumes', known while it is up), its cgroups and processes."""
    # Counters change with traffic; the rules themselves must come back exactly.
    rules = tuple(
        re.sub(r"\[\d+:\d+\]", "", line)
        for line in _out(["iptables-save"]).splitlines()
        if not line.startswith("#") and (lab.bridge_interface in line or str(lab.subnet) in line)
    )
    links = frozenset(
        name
        for line in _out(["ip", "-o", "link"]).splitlines()
        if (name := line.split(":")[1].strip().split("@")[0]) == lab.bridge_interface
        or f" master {lab.bridge_interface} " in line
    )
    processes = tuple(
        line for line in _out(["ps", "-eo", "args"]).splitlines() if f"--cgroup-parent=/{lab.prefix}" in line
    )
    mounted = {line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()}
    return MachineSnapshot(
        containers=frozenset(n for n in _out(["docker", "ps", "-a", "--format", "{{.Names}}"]).split() if n.startswith(lab.prefix)),
        volumes=frozenset(v for v in _out(["docker", "volume", "ls", "-q"]).split() if v.startswith(lab.prefix)),
        networks=frozenset(n for n in _out(["docker", "network", "ls", "--format", "{{.Name}}"]).split() if n == lab.network_name),
        links=links,
        iptables=rules,
        mounts=frozenset(mounted & mount_points),
        lab_cgroups=frozenset(str(p) for p in hosts.CGROUP_ROOT.glob(f"*/{lab.prefix}*")),
        lab_processes=processes,
    )


def lab_mount_points(lab: SimLab = LAB) -> frozenset[str]:
    """Where the machine's engine mounted the lab's host containers' file systems and volumes."""
    points = set()
    for container in hosts.lab_containers(lab):
        points.add(_out(["docker", "inspect", "--format", "{{.GraphDriver.Data.MergedDir}}", container]).strip())
    for volume in hosts.lab_volumes(lab):
        points.add(_out(["docker", "volume", "inspect", "--format", "{{.Mountpoint}}", volume]).strip())
    return frozenset(point for point in points if point and point != "<no value>")


@dataclass(frozen=True)
class SimulatedHosts:
    """The running simulated hosts and the machine as it was before it came up."""

    lab: SimLab
    hosts: list[HostSpec]
    before: MachineSnapshot
    mount_points: frozenset[str]
    """The lab's mounts on the machine while it is up: none may stay after `down`."""

    @property
    def state_dir(self) -> Path:
        return paths.state_dir(self.lab)

    @property
    def ssh_config(self) -> Path:
        return self.state_dir / "ssh_config"

    def ssh(self, host: str, *argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` over ssh with the simulator's key and strict host key checking."""
        # ssh joins its arguments into one remote shell line; quote them so they stay arguments.
        return subprocess.run(
            ["ssh", "-F", str(self.ssh_config), host, shlex.join(argv)],
            capture_output=True, text=True, check=check, timeout=timeout,
        )


def _log(message: str) -> None:
    print(f"simhosts: {message}")


@pytest.fixture(scope="session")
def hosts_up() -> Iterator[SimulatedHosts]:
    """2 simulated hosts; any left from before is removed first so the baseline is clean."""
    subprocess.run(["bash", str(paths.ENGINE_SCRIPT)], check=True)
    lifecycle.down(LAB, _log)
    before = take_snapshot()
    up_hosts = lifecycle.up(LAB, 2, _log)
    yield SimulatedHosts(lab=LAB, hosts=up_hosts, before=before, mount_points=lab_mount_points())
    if hosts.lab_containers(LAB) or paths.state_dir(LAB).exists():
        lifecycle.down(LAB, _log)
