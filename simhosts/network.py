"""The simulator's L2 segment: a user-defined bridge on the machine's engine, with outbound NAT."""

from __future__ import annotations

import json

from simhosts.plan import BRIDGE_INTERFACE, GATEWAY, LABEL, NETWORK_NAME, SUBNET
from simhosts.proc import docker


class NetworkConflict(RuntimeError):
    """A network of the simulator's name exists with other settings."""


def ensure_network() -> None:
    """Create the bridge ``dslab-lab`` (10.0.18.0/24, gateway .254) unless it exists as wanted."""
    existing = docker("network", "ls", "--quiet", "--filter", f"name=^{NETWORK_NAME}$")
    if existing:
        _check_existing()
        return
    docker(
        "network", "create", "--driver", "bridge",
        "--subnet", str(SUBNET), "--gateway", str(GATEWAY),
        # A fixed interface name makes the bridge easy to find (and to check it is gone).
        "--opt", f"com.docker.network.bridge.name={BRIDGE_INTERFACE}",
        "--label", f"{LABEL}=1",
        NETWORK_NAME,
    )


def remove_network() -> None:
    """Remove the bridge; docker removes its NAT and isolation rules with it."""
    if docker("network", "ls", "--quiet", "--filter", f"name=^{NETWORK_NAME}$"):
        docker("network", "rm", NETWORK_NAME)


def _check_existing() -> None:
    info = json.loads(docker("network", "inspect", NETWORK_NAME))[0]
    configs = info.get("IPAM", {}).get("Config") or [{}]
    subnet, gateway = configs[0].get("Subnet"), configs[0].get("Gateway")
    if subnet != str(SUBNET) or gateway != str(GATEWAY):
        raise NetworkConflict(
            f"network {NETWORK_NAME} exists with subnet {subnet} gateway {gateway}, expected "
            f"{SUBNET} gateway {GATEWAY}; run `python -m simhosts down` (or `docker network rm {NETWORK_NAME}`)"
        )
