"""The overlay network's address plan: gateway, swarm's dynamic range, one static address per host.

Docker's IPAM hands out addresses for swarm's own endpoints (one load-balancer endpoint per
node, service tasks) from ``ip_range``; a static ``ipv4_address`` given to a container must lie
outside it, or a later endpoint may take it first. The default plan splits the subnet in two
halves: the lower half is ``ip_range`` (it also holds the gateway, the first address), the upper
half holds the static container addresses. For the write-up's 10.0.3.0/24 that is ip_range
10.0.3.0/25, gateway 10.0.3.1, and containers 10.0.3.128, 10.0.3.129, ...

An address belongs to its host, not to the host's place in the list: a host keeps the address
its container already has (pinned ones aside), and only a host without one takes the lowest
free address. Adding, removing or reordering hosts therefore moves no other container.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

#: Smallest subnet that leaves room for a gateway, an ip_range and a few static addresses.
MAX_PREFIX_LENGTH = 29


class AddressPlanError(ValueError):
    """The plan cannot be made: the subnet has no room left, or a pinned address is another
    container's now. ``path`` is the key to change (``network.subnet``, ``hosts[1].container_address``)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(message)


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


def _refuse_pins_on_held_addresses(
    hosts: Sequence[tuple[str, str | None]],
    pinned: Mapping[str, IPv4Address],
    held: Mapping[str, str],
    in_use: Collection[str],
) -> None:
    """A pin on the address another container holds now would replace both containers in one
    run, in no order: the new one could be made before the old one lets the address go."""
    index = {name: position for position, (name, _) in enumerate(hosts)}
    for name, address in pinned.items():
        path = f"hosts[{index[name]}].container_address"
        holder = next((other for other, current in held.items() if other != name and IPv4Address(current) == address), None)
        if holder is not None:
            raise AddressPlanError(
                path,
                f"{address} is held now by the container of host {holder!r}; pin {holder!r} to another address "
                f"(or leave {name!r} unpinned) and run pulumi up, then pin {name!r} to {address}",
            )
        if str(address) in in_use:
            raise AddressPlanError(
                path,
                f"{address} is held now by the container of a host that leaves the lab; run pulumi up "
                f"without this pin first (it removes that container), then pin {name!r} to {address}",
            )


def plan_addresses(
    subnet: str,
    hosts: Sequence[tuple[str, str | None]],
    ip_range: str | None = None,
    gateway: str | None = None,
    held: Mapping[str, str] | None = None,
    in_use: Collection[str] = (),
) -> AddressPlan:
    """Give every host's container an overlay address that stays with the host.

    ``hosts`` is ``(name, pinned address or None)`` in configuration order; pinned addresses
    are kept as given (the configuration validator has already checked them). ``held`` maps a
    host name to the address its container has now: a host keeps it while it is a static
    candidate of this plan and no pinned address or other host claims it first. ``in_use`` are
    addresses other containers on the overlay hold (those of hosts leaving the list, until
    they are removed): nobody gets them in this run. The others take the lowest free candidates, in host order. Raises
    :class:`AddressPlanError` when the subnet runs out of candidates.
    """
    ip_range = ip_range or default_ip_range(subnet)
    gateway = gateway or default_gateway(subnet)
    held = held or {}
    candidates = list(static_candidates(subnet, ip_range, gateway))
    valid = set(candidates)
    pinned = {name: IPv4Address(address) for name, address in hosts if address is not None}
    _refuse_pins_on_held_addresses(hosts, pinned, held, in_use)
    taken = set(pinned.values())
    kept: dict[str, IPv4Address] = {}
    for name, _pinned in hosts:
        if name in pinned or name not in held:
            continue
        current = IPv4Address(held[name])
        if current in valid and current not in taken:
            kept[name] = current
            taken.add(current)
    # A held address not kept (its host was pinned elsewhere) stays with its old container
    # until that is replaced: nobody else gets it in this run either.
    taken |= {IPv4Address(address) for address in (*in_use, *held.values())}
    free = (candidate for candidate in candidates if candidate not in taken)
    assigned: list[tuple[str, str]] = []
    for name, _pinned in hosts:
        address = pinned[name] if name in pinned else kept[name] if name in kept else next(free, None)
        if address is None:
            holders = sorted({*held, *(host for host, _ in assigned)} | ({f"{len(in_use)} leaving"} if in_use else set()))
            raise AddressPlanError(
                "network.subnet",
                f"{subnet} has no free static address left for host {name!r} outside ip_range {ip_range} "
                f"(held: {', '.join(holders)}); use a larger subnet (e.g. a /24) or a smaller ip_range",
            )
        assigned.append((name, str(address)))
    return AddressPlan(
        subnet=str(IPv4Network(subnet)),
        gateway=gateway,
        ip_range=ip_range,
        container_addresses=tuple(assigned),
    )
