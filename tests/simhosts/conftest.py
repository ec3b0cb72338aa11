"""Fixtures for the simulator's tests: 2 real simulated hosts, brought up once per session."""

from __future__ import annotations

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
from simhosts.plan import HostSpec  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers this folder uses."""
    config.addinivalue_line("markers", "e2e: runs against real engines and containers (slow, needs root)")
    config.addinivalue_line("markers", "simhosts: tests of the host simulator (simhosts/)")


@dataclass(frozen=True)
class MachineSnapshot:
    """What the simulator may change on the machine, to compare before `up` and after `down`."""

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


def take_snapshot() -> MachineSnapshot:
    """Record the machine's containers, volumes, networks, links, firewall, mounts and simulator cgroups."""
    # Counters change with traffic; the rules themselves must come back exactly.
    rules = tuple(
        re.sub(r"\[\d+:\d+\]", "", line)
        for line in _out(["iptables-save"]).splitlines()
        if not line.startswith("#")
    )
    links = frozenset(line.split(":")[1].strip().split("@")[0] for line in _out(["ip", "-o", "link"]).splitlines())
    processes = tuple(line for line in _out(["ps", "-eo", "args"]).splitlines() if "--cgroup-parent=/dslab-" in line)
    return MachineSnapshot(
        containers=frozenset(_out(["docker", "ps", "-a", "--format", "{{.Names}}"]).split()),
        volumes=frozenset(_out(["docker", "volume", "ls", "-q"]).split()),
        networks=frozenset(_out(["docker", "network", "ls", "--format", "{{.Name}}"]).split()),
        links=links,
        iptables=rules,
        mounts=frozenset(Path("/proc/mounts").read_text().splitlines()),
        lab_cgroups=frozenset(str(p) for p in hosts.CGROUP_ROOT.glob("*/dslab-*")),
        lab_processes=processes,
    )


@dataclass(frozen=True)
class SimulatedHosts:
    """The running simulated hosts and the machine as it was before it came up."""

    hosts: list[HostSpec]
    before: MachineSnapshot

    @property
    def ssh_config(self) -> Path:
        return paths.state_dir() / "ssh_config"

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
    lifecycle.down(_log)
    before = take_snapshot()
    up_hosts = lifecycle.up(2, _log)
    yield SimulatedHosts(hosts=up_hosts, before=before)
    if hosts.lab_containers() or paths.state_dir().exists():
        lifecycle.down(_log)
