"""The overlay network's address plan: gateway, swarm's dynamic range, one static address per host.

Docker's IPAM hands out addresses for swarm's own endpoints (one load-balancer endpoint per
node, service tasks) from ``ip_range``; a static ``ipv4_address`` given to a container must lie
outside it, or a later endpoint may take it first. The default plan splits the subnet in two
halves: the lower half is ``ip_range`` (it also holds the gateway, the first address), the upper
half holds the static container addresses, handed out in host order from its first address.
For the write-up's 10.0.3.0/24 that is ip_range 10.0.3.0/25, gateway 10.0.3.1, and containers
10.0.3.128, 10.0.3.129, ...
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

#: Smallest subnet that leaves room for a gateway, an ip_range and a few static addresses.
MAX_PREFIX_LENGTH = 29


class AddressPlanError(ValueError):
    """The subnet has no room left for another static container address."""


@dataclass(frozen=True)
class AddressPlan:
    """Where everything lives on the overlay network."""

    subnet: str
    """The overlay subnet, e.g. ``10.0.3.0/24``."""
    gateway: str
    """The overlay's gateway: docker's default, the subnet's first address."""
    ip_range: str
    """The range docker IPAM allocates dynamic addresses from (swarm endpoints)."""
    container_addresses: tuple[tuple[str, str], ...]
    """``(host name, static container address)`` in host order."""

    def address_of(self, host_name: str) -> str:
        """The static overlay address of the container on ``host_name``."""
        for name, address in self.container_addresses:
            if name == host_name:
                return address
        raise KeyError(host_name)


def default_gateway(subnet: str) -> str:
    """Docker's default gateway for a subnet: its first usable address."""
    return str(ipaddress.IPv4Network(subnet).network_address + 1)


def default_ip_range(subnet: str) -> str:
    """The default dynamic range: the lower half of the subnet."""
    network = ipaddress.IPv4Network(subnet)
    lower, _upper = network.subnets(prefixlen_diff=1)
    return str(lower)


def static_candidates(
    subnet: str, ip_range: str, gateway: str
) -> Iterator[IPv4Address]:
    """Addresses a static container address may take, lowest first.

    Skips the network and broadcast addresses, the gateway and everything in ``ip_range``.
    """
    network = ipaddress.IPv4Network(subnet)
    dynamic = ipaddress.IPv4Network(ip_range)
    reserved = {
        network.network_address,
        network.broadcast_address,
        IPv4Address(gateway),
    }
    for address in network.hosts():
        if address not in reserved and address not in dynamic:
            yield address


def plan_addresses(
    subnet: str,
    hosts: Sequence[tuple[str, str | None]],
    ip_range: str | None = None,
    gateway: str | None = None,
) -> AddressPlan:
    """Give every host's container an overlay address, deterministically by host index.

    ``hosts`` is ``(name, requested address or None)`` in configuration order. Requested
    addresses are kept as given (the configuration validator has already checked them);
    the others get the lowest free candidates, in host order. Raises
    :class:`AddressPlanError` when the subnet runs out of candidates.
    """
    ip_range = ip_range or default_ip_range(subnet)
    gateway = gateway or default_gateway(subnet)
    taken = {IPv4Address(address) for _name, address in hosts if address is not None}
    free = (a for a in static_candidates(subnet, ip_range, gateway) if a not in taken)
    assigned: list[tuple[str, str]] = []
    for name, requested in hosts:
        if requested is not None:
            assigned.append((name, str(IPv4Address(requested))))
            continue
        address = next(free, None)
        if address is None:
            raise AddressPlanError(
                f"subnet {subnet} has no free static address left for host {name!r} "
                f"outside ip_range {ip_range}; use a larger subnet (e.g. a /24) or a smaller ip_range"
            )
        assigned.append((name, str(address)))
    return AddressPlan(
        subnet=str(IPv4Network(subnet)),
        gateway=gateway,
        ip_range=ip_range,
        container_addresses=tuple(assigned),
    )
