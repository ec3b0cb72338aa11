"""What the simulator consists of: names, addresses and roles, as pure data."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

MAX_HOSTS = 8
NETWORK_NAME = "dslab-lab"
BRIDGE_INTERFACE = "dslab0"
SUBNET = ipaddress.IPv4Network("10.0.18.0/24")
# The gateway sits at .254 so that serverN can be 10.0.18.N, as in the original write-up.
GATEWAY = ipaddress.IPv4Address("10.0.18.254")
# Every object the simulator creates on the machine's engine carries this label; `down` removes
# by label, so it also cleans up a lab started with more hosts than it is told about.
LABEL = "dslab.lab"
HOST_LABEL = "dslab.host"
CONTAINER_PREFIX = "dslab-"

Role = Literal["manager", "worker"]


@dataclass(frozen=True)
class HostSpec:
    """One simulated server."""

    name: str
    """Host name inside the simulator, e.g. ``server1``."""
    address: str
    """Fixed IPv4 address on the simulator bridge."""
    role: Role
    """Swarm role the Pulumi program gives it: server1 manages, the rest work."""

    @property
    def container(self) -> str:
        """Name of the container that is this host on the machine's engine."""
        return f"{CONTAINER_PREFIX}{self.name}"

    @property
    def volume(self) -> str:
        """Name of the volume that holds this host's /var/lib/docker."""
        return f"{CONTAINER_PREFIX}{self.name}-docker"


def plan_hosts(count: int) -> list[HostSpec]:
    """Return the hosts of a lab of ``count`` servers (1 to 8): server1 is the manager."""
    if not 1 <= count <= MAX_HOSTS:
        raise ValueError(f"--hosts must be between 1 and {MAX_HOSTS}, got {count}; e.g. --hosts 2")
    return [
        HostSpec(
            name=f"server{index}",
            address=str(SUBNET.network_address + index),
            role="manager" if index == 1 else "worker",
        )
        for index in range(1, count + 1)
    ]


def host_by_name(name: str) -> HostSpec:
    """Return the spec of host ``name`` (``server1``..``server8``)."""
    for host in plan_hosts(MAX_HOSTS):
        if host.name == name:
            return host
    raise ValueError(f"unknown lab host {name!r}; expected server1..server{MAX_HOSTS}, e.g. server2")
