"""What the simulator consists of: labs, their names, addresses and roles, as pure data.

A lab has a number (its id, 0 by default, ``--lab`` or ``DSLAB_LAB``). Everything a lab puts on
the machine derives from it: its bridge's subnet, its host containers' names (which are also their
cgroup parents), the bridge's interface name, its label and its operator files. Two labs on one
machine share nothing but the machine's engine and the simulator's images, so they run side by side.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_HOSTS = 8
MAX_LABS = 10
LAB_ENV = "DSLAB_LAB"
"""The environment variable that names the lab when ``--lab`` is not given."""
# Lab 0 is the write-up's 10.0.18.0/24; lab N takes the N-th /24 after it.
FIRST_SUBNET = ipaddress.IPv4Network("10.0.18.0/24")
# Every object the simulator creates on the machine's engine carries this label, valued with its
# lab; `down` removes by label, so it also cleans up a lab started with more hosts than it is told.
LABEL = "dslab.lab"
HOST_LABEL = "dslab.host"

Role = Literal["manager", "worker", "bastion"]
BASTION = "bastion"
"""The name of a lab's jump host (``up --bastion``): sshd only, in front of the servers."""
BASTION_OFFSET = 20
"""The bastion's address in the lab's subnet (lab 0: 10.0.18.20), clear of server1..server8."""


@dataclass(frozen=True)
class HostSpec:
    """One simulated server."""

    name: str
    """Host name inside the simulator, e.g. ``server1``."""
    address: str
    """Fixed IPv4 address on the lab's bridge."""
    role: Role
    """Swarm role the Pulumi program gives it: server1 manages, the rest work; or the bastion."""
    container: str
    """Name of the container that is this host on the machine's engine, e.g. ``dslab-server1``;
    also the cgroup parent of the containers its engine runs."""

    @property
    def volume(self) -> str:
        """Name of the volume that holds this host's /var/lib/docker."""
        return f"{self.container}-docker"


@dataclass(frozen=True)
class SimLab:
    """One simulated lab on this machine, named by its id."""

    id: int

    def __post_init__(self) -> None:
        if not 0 <= self.id < MAX_LABS:
            raise ValueError(f"a lab id is between 0 and {MAX_LABS - 1}, got {self.id}; e.g. --lab 1")

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        """The bridge's subnet: 10.0.18.0/24 for lab 0, 10.0.19.0/24 for lab 1, ..."""
        return ipaddress.IPv4Network((int(FIRST_SUBNET.network_address) + 256 * self.id, 24))

    @property
    def gateway(self) -> ipaddress.IPv4Address:
        """At .254, so that serverN can be .N, as in the original write-up."""
        return self.subnet.network_address + 254

    @property
    def prefix(self) -> str:
        """What every name of the lab on the machine starts with: ``dslab-`` for lab 0, ``dslab1-``..."""
        return "dslab-" if self.id == 0 else f"dslab{self.id}-"

    @property
    def network_name(self) -> str:
        """The machine engine's bridge network of the lab."""
        return f"{self.prefix}lab"

    @property
    def bridge_interface(self) -> str:
        """The bridge's fixed interface name (easy to find, and to check it is gone)."""
        return f"dslab{self.id}"

    @property
    def label_value(self) -> str:
        """The value of :data:`LABEL` on the lab's containers, volumes and network."""
        return str(self.id)

    def state_dir(self, repo_root: Path) -> Path:
        """Operator-side files (keys, known_hosts, ssh config, stack config), git-ignored:
        ``.simhosts/`` for lab 0, ``.simhosts-N/`` for lab N."""
        return repo_root / (".simhosts" if self.id == 0 else f".simhosts-{self.id}")

    def hosts(self, count: int) -> list[HostSpec]:
        """The hosts of a lab of ``count`` servers (1 to 8): server1 is the manager."""
        if not 1 <= count <= MAX_HOSTS:
            raise ValueError(f"--hosts must be between 1 and {MAX_HOSTS}, got {count}; e.g. --hosts 2")
        return [
            HostSpec(
                name=f"server{index}",
                address=str(self.subnet.network_address + index),
                role="manager" if index == 1 else "worker",
                container=f"{self.prefix}server{index}",
            )
            for index in range(1, count + 1)
        ]

    @property
    def bastion(self) -> HostSpec:
        """The lab's jump host (``up --bastion``): sshd only; the operator then reaches the servers
        through it alone."""
        return HostSpec(
            name=BASTION,
            address=str(self.subnet.network_address + BASTION_OFFSET),
            role="bastion",
            container=f"{self.prefix}{BASTION}",
        )

    def host(self, name: str) -> HostSpec:
        """The spec of host ``name`` (``server1``..``server8``, or ``bastion``)."""
        if name == BASTION:
            return self.bastion
        for host in self.hosts(MAX_HOSTS):
            if host.name == name:
                return host
        raise ValueError(f"unknown lab host {name!r}; expected server1..server{MAX_HOSTS}, e.g. server2")

    def address(self, name: str) -> str:
        """The address of host ``name`` on the lab's bridge."""
        return self.host(name).address


def lab_from_env(environ: Mapping[str, str] | None = None) -> SimLab:
    """The lab ``DSLAB_LAB`` names (0 when unset)."""
    value = (os.environ if environ is None else environ).get(LAB_ENV, "").strip() or "0"
    try:
        return SimLab(int(value))
    except ValueError:
        raise ValueError(f"{LAB_ENV}={value!r} is not a lab id; expected 0..{MAX_LABS - 1}, e.g. {LAB_ENV}=1") from None
